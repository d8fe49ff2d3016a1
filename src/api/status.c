/* SPDX-License-Identifier: MIT */
/* status.c -- the live status page (docs/design.md §9): GET /status is one self-contained HTML
 * page (no external assets) that polls GET /status.json every two seconds and draws the
 * routes with their tiers and every target's circuit, health, latency, load and last
 * error. Read-only and free of secrets, like /metrics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/admin_clients.h"
#include "api/status.h"
#include "api/status_cache.h"
#include "api/status_outcomes.h"
#include "api/targets_json.h"
#include "api/status_history.h"
#include "core/buf.h"
#include "core/clock.h"
#include "metrics/metrics.h"
#include "router/gateway.h"

static const char page[] =
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    "<title>bascule status</title><style>"
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1b1f24;background:#f6f8fa}"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}"
    ".meta{color:#57606a;margin-bottom:16px}"
    "table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #d0d7de}"
    "th,td{padding:6px 10px;border-bottom:1px solid #d0d7de;text-align:left;white-space:nowrap}"
    "th{background:#eef1f4;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600}"
    ".closed{background:#dafbe1;color:#116329}.open{background:#ffebe9;color:#a40e26}"
    ".half_open{background:#fff8c5;color:#7d4e00}.ramp{background:#ddf4ff;color:#0550ae}"
    ".off{background:#eaeef2;color:#57606a}.up{color:#116329}.down{color:#a40e26}"
    ".err{color:#a40e26}#state{float:right;color:#57606a}"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.chart{background:#fff;border:1px solid #d0d7de;"
    "padding:6px}.chart h3{font-size:13px;margin:0 0 4px}.chart svg{display:block}"
    ".events{background:#fff;border:1px solid #d0d7de;margin:0;padding:6px 6px 6px 32px;"
    "max-height:320px;overflow:auto}.events li{padding:2px 0;white-space:nowrap}"
    ".events .k{font-weight:600}.lg{font-size:12px;color:#57606a}</style></head><body>"
    "<span id=\"state\">loading...</span><h1>bascule</h1>"
    "<div class=\"meta\" id=\"meta\"></div>"
    "<form id=\"login\" hidden><p>This gateway needs its admin key for the status page. "
    "It is kept for this tab only.</p><input id=\"key\" type=\"password\" "
    "autocomplete=\"off\" placeholder=\"admin key\" size=\"40\"> <button>Show</button> "
    "<span id=\"loginerr\" class=\"err\"></span></form>"
    "<h2>Last 15 minutes</h2><div id=\"charts\" class=\"charts\"></div>"
    "<h2>Events</h2><ol id=\"events\" class=\"events\"></ol>"
    "<h2>Targets</h2><table><thead><tr><th>target</th><th>provider</th><th>model</th>"
    "<th>circuit</th><th>health</th><th>latency ms</th><th>TTFT ms</th>"
    "<th>in flight / adaptive limit</th><th>limits</th>"
    "<th>ok</th><th>failed</th><th>last error</th></tr></thead><tbody id=\"targets\"></tbody>"
    "</table><h2>Routes</h2><table><thead><tr><th>route</th><th>primary</th>"
    "<th>equivalent</th><th>fallback</th><th>balance</th></tr></thead>"
    "<tbody id=\"routes\"></tbody></table><h2>Shadow candidates</h2><table><thead><tr>"
    "<th>route</th><th>candidate</th><th>ok</th><th>failed</th><th>agreement</th>"
    "<th>p50 ms</th></tr></thead><tbody id=\"shadow\"></tbody></table>"
    "<h2>Success by layer</h2><table><thead><tr><th>target / workflow</th><th>transport</th>"
    "<th>contract</th><th>task</th><th>recent attempts ok</th><th>recent tasks ok</th></tr>"
    "</thead><tbody id=\"outcomes\"></tbody></table><h2>Clients</h2><table><thead><tr>"
    "<th>client</th><th>in flight</th><th>spend</th><th>budget</th><th>period</th></tr>"
    "</thead><tbody id=\"clients\"></tbody></table><h2>Response cache</h2><table><thead><tr>"
    "<th>route</th><th>hits</th><th>misses</th><th>bypassed</th><th>hit ratio</th></tr>"
    "</thead><tbody id=\"cache\"></tbody></table><script>"
    "const esc=s=>String(s==null?'':s).replace(/[&<>\"']/g,c=>'&#'+c.charCodeAt(0)+';');"
    "const ms=v=>v==null||v<0?'-':v.toFixed(1);"
    "function circuit(t){if(t.disabled||t.admin_disabled)return'<span class=\"pill off\">disabled</span>';"
    "if(t.circuit==='closed'&&t.ramping)return'<span class=\"pill ramp\">ramping '+"
    "Math.round(t.ramp_fraction*100)+'%</span>';"
    "return'<span class=\"pill '+esc(t.circuit)+'\">'+esc(t.circuit.replace('_','-'))+'</span>'}"
    "function lim(l){if(!l)return'-';const o=[];"
    "if(l.rpm)o.push('rpm '+l.effective_rpm+(l.effective_rpm<l.rpm?'/'+l.rpm:''));"
    "if(l.tpm)o.push('tpm '+l.tpm);"
    "if(l.max_concurrency)o.push('slots '+l.inflight+' of '+l.effective_max_concurrency+"
    "(l.effective_max_concurrency<l.max_concurrency?'/'+l.max_concurrency:''));"
    "if(l.queue_ms)o.push('queue '+l.queue_ms+' ms');if(l.queued)o.push(l.queued+' queued');"
    "return o.length?esc(o.join(' \\u00b7 ')):'-'}"
    "function tier(ids){return ids.length?ids.map(esc).join(', '):'-'}"
    "const COL=['#0969da','#cf222e','#1a7f37','#8250df','#bf8700','#57606a'];"
    /* One chart: a polyline per series over the points' times; null values break the line. */
    "function chart(title,pts,lines,unit){const W=420,H=120,t0=pts.length?pts[0].t:0,"
    "t1=pts.length?pts[pts.length-1].t:1;let max=0;"
    "lines.forEach(l=>pts.forEach(p=>{const v=l.get(p);if(v!=null&&v>max)max=v}));"
    "if(!max)max=1;const x=t=>t1>t0?((t-t0)/(t1-t0))*(W-40)+36:36,y=v=>H-14-(v/max)*(H-24);"
    "let svg='<svg width=\"'+W+'\" height=\"'+H+'\" role=\"img\"><text x=\"0\" y=\"10\" "
    "font-size=\"10\" fill=\"#57606a\">'+esc(max.toPrecision(3))+' '+esc(unit)+'</text>"
    "<line x1=\"36\" y1=\"'+(H-14)+'\" x2=\"'+W+'\" y2=\"'+(H-14)+'\" stroke=\"#d0d7de\"/>';"
    "lines.forEach((l,i)=>{let seg=[];const flush=()=>{if(seg.length)svg+='<polyline fill=\"none\" "
    "stroke=\"'+COL[i%COL.length]+'\" stroke-width=\"1.5\" data-series=\"'+esc(l.name)+'\" "
    "points=\"'+seg.join(' ')+'\"/>';seg=[]};pts.forEach(p=>{const v=l.get(p);"
    "if(v==null){flush();return}seg.push(x(p.t).toFixed(1)+','+y(v).toFixed(1))});flush()});"
    "svg+='</svg>';return'<div class=\"chart\"><h3>'+esc(title)+'</h3>'+svg+'<div class=\"lg\">'+"
    "lines.map((l,i)=>'<span style=\"color:'+COL[i%COL.length]+'\">\u25a0</span> '+esc(l.name))"
    ".join(' ')+'</div></div>'}"
    "function charts(se){if(!se)return'';const pts=se.points||[];const ids=k=>{const o=new Set();"
    "pts.forEach(p=>Object.keys(p[k]||{}).forEach(i=>o.add(i)));return[...o].slice(0,6)};"
    "const R=ids('routes'),T=ids('targets');"
    "const g=(k,id,f)=>({name:id,get:p=>p[k]&&p[k][id]?p[k][id][f]:null});"
    "return chart('Requests/s by route',pts,R.map(i=>g('routes',i,'rps')),'req/s')+"
    "chart('Errors/s by route',pts,R.map(i=>g('routes',i,'errors_ps')),'err/s')+"
    "chart('p95 latency by route',pts,R.map(i=>g('routes',i,'p95_ms')),'ms')+"
    "chart('p95 TTFT by route',pts,R.map(i=>g('routes',i,'ttft_p95_ms')),'ms')+"
    "chart('Failovers and fallbacks',pts,R.map(i=>g('routes',i,'failovers')).concat("
    "R.map(i=>({name:i+' fallback',get:g('routes',i,'fallbacks').get}))),'per 10 s')+"
    "chart('Attempts/s by target',pts,T.map(i=>g('targets',i,'rps')),'req/s')+"
    "chart('p95 attempt latency by target',pts,T.map(i=>g('targets',i,'p95_ms')),'ms')+"
    "chart('Failed attempts/s by target',pts,T.map(i=>g('targets',i,'errors_ps')),'err/s')}"
    "function events(ev){return(ev||[]).slice().reverse().map(e=>'<li><time>'+"
    "esc(new Date(e.t).toLocaleTimeString())+'</time> <span class=\"k\">'+esc(e.kind)+"
    "'</span> '+esc(e.subject)+(e.from||e.to?' '+esc(e.from||'')+' \u2192 '+esc(e.to||''):'')+"
    "(e.reason?' <span class=\"lg\">'+esc(e.reason)+'</span>':'')+'</li>').join('')}"
    /* The admin key, when the port needs it: asked once, kept in sessionStorage (this tab). */
    "const KEY='bascule-admin-key';"
    "document.getElementById('login').onsubmit=ev=>{ev.preventDefault();"
    "sessionStorage.setItem(KEY,document.getElementById('key').value);tick()};"
    "async function tick(){try{const k=sessionStorage.getItem(KEY);"
    "const r=await fetch('status.json',{cache:'no-store',headers:k?{authorization:'Bearer '+k}:{}});"
    "const f=document.getElementById('login');"
    "if(r.status===401||r.status===403){f.hidden=false;document.getElementById('loginerr')"
    ".textContent=k?'that key was refused':'';document.getElementById('state').textContent="
    "'admin key needed';return}f.hidden=true;"
    "const s=await r.json();"
    "document.getElementById('charts').innerHTML=charts(s.series);"
    "document.getElementById('events').innerHTML=events(s.events);"
    "document.getElementById('meta').textContent='up '+s.uptime_s+' s \\u00b7 '+s.workers+"
    "' workers \\u00b7 '+s.targets.length+' targets \\u00b7 '+s.routes.length+' routes';"
    "document.getElementById('targets').innerHTML=s.targets.map(t=>'<tr><td>'+esc(t.id)+"
    "'</td><td>'+esc(t.provider)+'</td><td>'+esc(t.model)+'</td><td>'+circuit(t)+"
    "'</td><td class=\"'+esc(t.health)+'\">'+esc(t.health)+'</td><td class=num>'+"
    "ms(t.ewma_latency_ms)+'</td><td class=num>'+ms(t.ewma_ttft_ms)+'</td><td class=num>'+"
    "t.inflight+(t.adaptive&&t.adaptive.effective_concurrency?' / '+"
    "t.adaptive.effective_concurrency:'')+'</td><td>'+lim(t.limits)+'</td><td class=num>'+"
    "t.successes+'</td><td class=num>'+t.failures+"
    "'</td><td class=err>'+esc(t.last_error||'')+'</td></tr>').join('');"
    "document.getElementById('routes').innerHTML=s.routes.map(x=>'<tr><td>'+esc(x.id)+"
    "'</td><td>'+tier(x.primary)+'</td><td>'+tier(x.equivalent)+'</td><td>'+"
    "tier(x.fallback)+'</td><td>'+esc(x.balance)+'</td></tr>').join('');"
    "document.getElementById('shadow').innerHTML=(s.shadow||[]).map(x=>'<tr><td>'+esc(x.route)+"
    "'</td><td>'+esc(x.target)+'</td><td class=num>'+x.ok+'</td><td class=num>'+x.failed+"
    "'</td><td class=num>'+(x.agreement_rate==null?'-':(x.agreement_rate*100).toFixed(1)+'%')+"
    "'</td><td class=num>'+ms(x.p50_latency_ms)+'</td></tr>').join('');"
    "const pct=(ok,n)=>n?(ok*100/n).toFixed(1)+'% of '+n:'-';"
    "const lay=x=>['transport','contract','task'].map(l=>'<td class=num>'+"
    "pct(x[l].ok,x[l].ok+x[l].failed)+'</td>').join('');"
    "const oc=s.outcomes||{targets:[],workflows:[]};"
    "document.getElementById('outcomes').innerHTML=oc.targets.map(x=>'<tr><td>'+esc(x.target)+"
    "'</td>'+lay(x)+'<td class=num>'+pct(x.recent.attempts_ok,x.recent.attempts)+"
    "'</td><td class=num>'+pct(x.recent.tasks_ok,x.recent.tasks)+'</td></tr>').join('')+"
    "oc.workflows.map(x=>'<tr><td><i>'+esc(x.workflow)+'</i></td>'+lay(x)+"
    "'<td>-</td><td>-</td></tr>').join('');"
    "const usd=v=>v==null?'-':'$'+v.toFixed(4);"
    "document.getElementById('clients').innerHTML=(s.clients||[]).map(x=>'<tr><td>'+esc(x.id)+"
    "'</td><td class=num>'+x.in_flight+'</td><td class=num>'+usd(x.spend_usd)+"
    "'</td><td class=num>'+usd(x.budget_usd)+'</td><td>'+esc(x.period)+'</td></tr>').join('');"
    "const ca=s.cache||{routes:[]};"
    "document.getElementById('cache').innerHTML=ca.routes.map(x=>'<tr><td>'+esc(x.route)+"
    "'</td><td class=num>'+x.hit+'</td><td class=num>'+x.miss+'</td><td class=num>'+x.bypass+"
    "'</td><td class=num>'+(x.hit_ratio==null?'-':(x.hit_ratio*100).toFixed(1)+'%')+"
    "'</td></tr>').join('');"
    "document.getElementById('state').textContent='live \\u00b7 '+new Date().toLocaleTimeString();"
    "}catch(e){document.getElementById('state').textContent='disconnected'}}"
    "tick();setInterval(tick,2000);</script></body></html>";

void api__status_page(struct worker *w, struct srv_req *req)
{
    struct srv_header h = {BSC_STR("Cache-Control"), BSC_STR("no-cache")};

    (void)w;
    srv_resp_send(req, 200, "text/html; charset=utf-8", &h, 1, page, sizeof(page) - 1);
}

static void put_tier(struct bsc_buf *b, const char *name, const struct cfg_tier *t)
{
    bsc_buf_appendf(b, ",\"%s\":[", name);
    for (size_t i = 0; i < t->n; i++) {
        if (i)
            bsc_buf_append_char(b, ',');
        bsc_buf_append_json_str(b, bsc_str_cstr(t->targets[i]->id));
    }
    bsc_buf_append_char(b, ']');
}

/* ---- shadow candidates, read back from the metrics registry ---- */

#define STATUS_MAX_SHADOWS 256

struct shadow_row {
    const char *route, *target; /* borrowed from the registry */
    double ok, failed, agree, disagree;
    const uint64_t *buckets;    /* borrowed from the snapshot: the latency histogram */
    uint64_t count;
};

static struct shadow_row *shadow_row(struct shadow_row *rows, size_t *n, const char *route,
                                     const char *target)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(rows[i].route, route) == 0 && strcmp(rows[i].target, target) == 0)
            return &rows[i];
    if (*n == STATUS_MAX_SHADOWS)
        return NULL;
    rows[*n] = (struct shadow_row){.route = route, .target = target};
    return &rows[(*n)++];
}

/* The median of a histogram, interpolated within its bucket as Prometheus'
 * histogram_quantile does; negative when there is no observation. */
static double bucket_p50_ms(const uint64_t *buckets, uint64_t count)
{
    size_t nb;
    const double *bounds = metrics_bucket_bounds(METRIC_SHADOW_LATENCY, &nb);
    double half = (double)count / 2.0, seen = 0.0, lo = 0.0;

    if (!buckets || !count)
        return -1.0;
    for (size_t i = 0; i < nb; i++) {
        if (seen + (double)buckets[i] >= half && buckets[i])
            return 1e3 * (lo + (bounds[i] - lo) * (half - seen) / (double)buckets[i]);
        seen += (double)buckets[i];
        lo = bounds[i];
    }
    return 1e3 * lo; /* in +Inf: the largest finite bound, as Prometheus answers */
}

static void collect_shadow(const struct metrics_snapshot *snap, struct shadow_row *rows,
                           size_t *n)
{
    for (size_t i = 0; i < snap->n; i++) {
        const struct metrics_sample *m = &snap->samples[i];
        struct shadow_row *row;

        if (m->id != METRIC_SHADOW_REQUESTS && m->id != METRIC_SHADOW_AGREEMENT &&
            m->id != METRIC_SHADOW_LATENCY)
            continue;
        row = shadow_row(rows, n, m->labels[0], m->labels[1]);
        if (!row)
            continue;
        if (m->id == METRIC_SHADOW_LATENCY) {
            row->buckets = m->buckets;
            row->count = m->count;
        } else if (m->id == METRIC_SHADOW_REQUESTS && strcmp(m->labels[2], "ok") == 0) {
            row->ok += m->value;
        } else if (m->id == METRIC_SHADOW_REQUESTS && strcmp(m->labels[2], "skipped") != 0) {
            row->failed += m->value;
        } else if (m->id == METRIC_SHADOW_AGREEMENT && strcmp(m->labels[2], "agree") == 0) {
            row->agree += m->value;
        } else if (m->id == METRIC_SHADOW_AGREEMENT && strcmp(m->labels[2], "disagree") == 0) {
            row->disagree += m->value;
        }
    }
}

/* ,"shadow":[{route, target, ok, failed, agreement_rate, p50_latency_ms}]: per candidate,
 * mirrored requests that got a valid answer or failed (transport or contract), the share
 * of agreeing answers among those compared (null before one), the median latency. */
static void put_shadow(struct bsc_buf *b, struct worker *w)
{
    struct shadow_row *rows = calloc(STATUS_MAX_SHADOWS, sizeof(*rows)); /* owned */
    struct metrics_snapshot snap = {0};
    size_t n = 0;

    bsc_buf_append_cstr(b, ",\"shadow\":[");
    if (rows && metrics_snapshot_take(w->gw->metrics, &snap) == BSC_OK)
        collect_shadow(&snap, rows, &n);
    for (size_t i = 0; i < n; i++) {
        const struct shadow_row *r = &rows[i];
        double compared = r->agree + r->disagree, p50 = bucket_p50_ms(r->buckets, r->count);

        bsc_buf_append_cstr(b, i ? ",{\"route\":" : "{\"route\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(r->route));
        bsc_buf_append_cstr(b, ",\"target\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(r->target));
        bsc_buf_appendf(b, ",\"ok\":%.0f,\"failed\":%.0f,\"agree\":%.0f,\"disagree\":%.0f",
                        r->ok, r->failed, r->agree, r->disagree);
        if (compared > 0)
            bsc_buf_appendf(b, ",\"agreement_rate\":%.4f", r->agree / compared);
        else
            bsc_buf_append_cstr(b, ",\"agreement_rate\":null");
        if (p50 >= 0)
            bsc_buf_appendf(b, ",\"p50_latency_ms\":%.1f}", p50);
        else
            bsc_buf_append_cstr(b, ",\"p50_latency_ms\":null}");
    }
    bsc_buf_append_char(b, ']');
    metrics_snapshot_cleanup(&snap);
    free(rows);
}

void api__status_json(struct worker *w, struct srv_req *req)
{
    struct cfg *cfg = cfg_current_get();
    uint64_t now = bsc_now_ms();
    struct bsc_buf b;

    bsc_buf_init(&b, 8u << 20);
    bsc_buf_appendf(&b, "{\"uptime_s\":%llu,\"workers\":%u,\"targets\":[",
                    (unsigned long long)((bsc_wall_ms() - w->gw->started_ms) / 1000),
                    w->gw->n_workers);
    for (size_t i = 0; i < cfg->n_targets; i++) {
        if (i)
            bsc_buf_append_char(&b, ',');
        api__put_target(&b, w, &cfg->targets[i], now);
    }
    bsc_buf_append_cstr(&b, "],\"routes\":[");
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const struct cfg_route *r = &cfg->routes[i];
        bsc_buf_append_cstr(&b, i ? ",{\"id\":" : "{\"id\":");
        bsc_buf_append_json_str(&b, bsc_str_cstr(r->id));
        put_tier(&b, "primary", &r->primary);
        put_tier(&b, "equivalent", &r->equivalent);
        put_tier(&b, "fallback", &r->fallback);
        bsc_buf_appendf(&b, ",\"balance\":\"%s\"}", cfg_balance_name(r->balance));
    }
    bsc_buf_append_char(&b, ']');
    put_shadow(&b, w);
    api__put_outcomes(&b, w, cfg);
    api__put_clients_status(&b, w, cfg);
    /* The events up to this request (series points come from the main loop's sampler). */
    status_history_observe(w->gw->history, w->gw, cfg, bsc_wall_ms(), false);
    status_history_put_json(w->gw->history, &b);
    api__put_cache_status(&b, w);
    bsc_buf_append_char(&b, '}');
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
    cfg_unref(cfg);
}
