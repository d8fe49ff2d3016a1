/* SPDX-License-Identifier: MIT */
/* console.c -- GET /console: the operator console, one static page (no data in it) whose
 * script asks for an admin key, keeps it in the tab's sessionStorage and calls the admin API
 * with it: Keys (create, rotate, revoke; spend against budget), Teams, Audit (who changed
 * what). Served wherever the admin API is (the admin listener when admin.listen is set);
 * every figure it shows comes from /admin/..., so a read key sees, and its writes are
 * refused there. Text from the gateway is set with textContent, never as HTML. See
 * docs/internals/keys.md. */
#include "api/internal.h"

static const char page[] =
    "<!doctype html>\n"
    "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>bascule console</title>\n"
    "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
    "<style>\n"
    "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}\n"
    "h1{font-size:1.3em}\n"
    "nav button{margin-right:.3em}\n"
    "nav button.on{font-weight:bold}\n"
    "table{border-collapse:collapse;margin-top:.8em;width:100%}\n"
    "th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left}\n"
    ".num{text-align:right}\n"
    "#msg{margin:.5em 0;color:#a00;min-height:1.2em}\n"
    "#secret{margin:.5em 0;padding:.5em;background:#ffd;font-family:monospace;display:none}\n"
    "form input{margin-right:.3em}\n"
    ".revoked{color:#999}\n"
    "</style></head><body>\n"
    "<h1>bascule console</h1>\n"
    "<div id=\"login\"><input id=\"key\" type=\"password\" placeholder=\"admin key\" autocomplete=\"off\">\n"
    "<button id=\"signin\">Sign in</button> <span id=\"who\"></span></div>\n"
    "<div id=\"msg\" role=\"status\"></div>\n"
    "<nav><button data-view=\"keys\" class=\"on\">Keys</button><button data-view=\"teams\">Teams</button><button data-view=\"audit\">Audit</button></nav>\n"
    "<section id=\"view-keys\">\n"
    "<form id=\"create\"><input name=\"client\" placeholder=\"client\"><input name=\"routes\" placeholder=\"routes, comma-separated\">\n"
    "<input name=\"budget\" placeholder=\"budget, e.g. 50/month\"><button type=\"submit\">Create key</button></form>\n"
    "<div id=\"secret\"></div>\n"
    "<table><thead><tr><th>id</th><th>client</th><th>source</th><th>status</th><th>routes</th><th class=\"num\">spend</th><th class=\"num\">budget</th><th></th></tr></thead><tbody id=\"keys\"></tbody></table>\n"
    "</section>\n"
    "<section id=\"view-teams\" hidden><p>Teams are not supported by this version of the gateway.</p></section>\n"
    "<section id=\"view-audit\" hidden>\n"
    "<table><thead><tr><th>time</th><th>admin</th><th>action</th><th>subject</th></tr></thead><tbody id=\"audit\"></tbody></table>\n"
    "</section>\n"
    "<script>\n"
    "\"use strict\";\n"
    "const $=id=>document.getElementById(id);\n"
    "let key=sessionStorage.getItem('bascule-admin-key')||'';\n"
    "function say(t){$('msg').textContent=t}\n"
    "async function api(method,path,body){\n"
    "  const r=await fetch('/admin/'+path,{method,headers:{authorization:'Bearer '+key,'content-type':'application/json'},\n"
    "    body:body===undefined?undefined:JSON.stringify(body)});\n"
    "  const j=await r.json().catch(()=>({}));\n"
    "  if(!r.ok)throw new Error((j.error&&j.error.message)||('HTTP '+r.status));\n"
    "  return j;\n"
    "}\n"
    "function cell(tr,text,cls){const td=document.createElement('td');td.textContent=text==null?'-':String(text);if(cls)td.className=cls;tr.appendChild(td);return td}\n"
    "function usd(v){return v==null?'-':'$'+Number(v).toFixed(4)}\n"
    "function showSecret(k){const s=$('secret');s.style.display='block';\n"
    "  s.textContent='Secret of '+k.id+' (shown once, store it now): '+k.secret}\n"
    "function actions(td,k){\n"
    "  if(k.source!=='api'||k.status==='revoked')return;\n"
    "  const rot=document.createElement('button');rot.textContent='Rotate';rot.dataset.act='rotate';rot.dataset.id=k.id;\n"
    "  rot.onclick=async()=>{try{showSecret(await api('POST','keys/'+k.id+'/rotate',{}));say('');load()}catch(e){say(e.message)}};\n"
    "  const rev=document.createElement('button');rev.textContent='Revoke';rev.dataset.act='revoke';rev.dataset.id=k.id;\n"
    "  rev.onclick=async()=>{if(rev.textContent!=='Confirm revoke'){rev.textContent='Confirm revoke';return}\n"
    "    try{await api('DELETE','keys/'+k.id);say('');load()}catch(e){say(e.message)}};\n"
    "  td.append(rot,' ',rev);\n"
    "}\n"
    "async function loadKeys(){\n"
    "  const {keys}=await api('GET','keys');const tb=$('keys');tb.textContent='';\n"
    "  for(const k of keys){const tr=document.createElement('tr');tr.dataset.id=k.id;if(k.status==='revoked')tr.className='revoked';\n"
    "    cell(tr,k.id);cell(tr,k.client);cell(tr,k.source);cell(tr,k.status||'active');cell(tr,(k.routes||[]).join(', '));\n"
    "    cell(tr,usd(k.spend_usd),'num');cell(tr,k.budget?usd(k.budget.usd)+'/'+k.budget.period:'-','num');\n"
    "    actions(cell(tr,''),k);tb.appendChild(tr)}\n"
    "}\n"
    "async function loadAudit(){\n"
    "  const {entries}=await api('GET','audit');const tb=$('audit');tb.textContent='';\n"
    "  for(const e of entries.slice().reverse()){const tr=document.createElement('tr');\n"
    "    cell(tr,new Date(e.time_ms).toISOString());cell(tr,e.admin);cell(tr,e.action);cell(tr,e.subject);tb.appendChild(tr)}\n"
    "}\n"
    "let view='keys';\n"
    "async function load(){if(!key)return;try{if(view==='keys')await loadKeys();if(view==='audit')await loadAudit();\n"
    "  $('who').textContent='signed in';document.body.dataset.ready=view}catch(e){say(e.message)}}\n"
    "document.querySelectorAll('nav button').forEach(b=>b.onclick=()=>{view=b.dataset.view;\n"
    "  document.querySelectorAll('nav button').forEach(x=>x.classList.toggle('on',x===b));\n"
    "  for(const v of ['keys','teams','audit'])$('view-'+v).hidden=v!==view;document.body.dataset.ready='';load()});\n"
    "$('signin').onclick=()=>{key=$('key').value;sessionStorage.setItem('bascule-admin-key',key);$('key').value='';say('');load()};\n"
    "$('create').onsubmit=async ev=>{ev.preventDefault();const f=ev.target;\n"
    "  const body={client:f.client.value,routes:f.routes.value.split(',').map(s=>s.trim()).filter(Boolean)};\n"
    "  if(f.budget.value)body.budget=f.budget.value;\n"
    "  try{showSecret(await api('POST','keys',body));f.reset();say('');load()}catch(e){say(e.message)}};\n"
    "load();\n"
    "</script></body></html>\n"
    "\n";

void api__console_page(struct worker *w, struct srv_req *req)
{
    struct srv_header h[] = {
        {BSC_STR("Cache-Control"), BSC_STR("no-cache")},
        {BSC_STR("Content-Security-Policy"),
         BSC_STR("default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                 "frame-ancestors 'none'")},
        {BSC_STR("X-Frame-Options"), BSC_STR("DENY")},
    };

    (void)w;
    srv_resp_send(req, 200, "text/html; charset=utf-8", h, 3, page, sizeof(page) - 1);
}
