// SPDX-License-Identifier: MIT
// A self-signed certificate for TLS upstreams inside a test, made by openssl in a temp dir:
// P-256, subjectAltName IP:127.0.0.1 only (so "localhost" does not match it), CA:TRUE (it
// is its own CA, the file a provider's tls.ca_file names).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

// { dir, cert, key, remove() }
export function makeTestCert(prefix = 'bascule-tls-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const cert = path.join(dir, 'ca.pem');
  const key = path.join(dir, 'key.pem');
  const r = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=bascule test', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-keyout', key, '-out', cert,
  ], { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 0, `openssl: ${r.stderr}`);
  return { dir, cert, key, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
