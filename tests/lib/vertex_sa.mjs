// The test service account of bascule-sim's Vertex dialect: sim/dialect_vertex.c holds the
// public half of this key and accepts JWT assertions signed with it. A test key, never a real one.
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const SIM_SA_PRIVATE_KEY = `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCVqy2iWtdfcuxY
FoPSlB9CUaG9e7eRNnJ8cU9w/plS48otk2OtRwSW65lZ904Zqrjzk5wsY4It1CBj
DEPgbt4sQehF5k2fY0285l20odJ2hgRJdBn9Z/KHg70edITs+aKfsJsLwIvuWswQ
css+fs/vQX8uObHmKLe5Kz3SBwuMKKOERzI/MW2mywIye7TeAoEZ0PmT1xy5Kq9/
vaCrRjRdqoqYkEWbO+v1//uItJSAdeOkFy3xCVXpN5o4wA9MzL7fWthX4lpA5/1c
D4062bbEU3zH8o8yyD/iUvR5vqoGh7r04z9/sCBUy+x65pqFzK2DCvy4xKEO8NMO
iWU87oZFAgMBAAECggEAA1vmTXSqImoYXs5mjU/Qtx17j/PvsJJ0avw6CF2rwD38
2B1XiS3aWa7A8CbKOcOTR2LX3ZvVce+G/eIVFeY3Fe7cESbe4BsLmsKKy4Eu5tpm
zI/j/hlv9Sr3kBrqWXfYIVWxLR2C+8mi4c2fEnB90dn6Sjsg6yWdIJ/qpm+NCqCy
vE9al7nGZh/otaOrU7kZEZ2+3up3Qn/3MKKHhMbjb0cIn1yA6yrLgUqZoDjC/2mY
32bXRnQ27YdkR+Z2JB84MMM/zO7HPYQb2xgbQwBIgOJubcPSNfkqJEx7oyKcuSRc
SoyESkCN/8odaC2ZiWOk0WvWmtH6nR2vnwW/oOk6gwKBgQDKRg+FzBD2ZYj053CK
MS3oqUyNBM20XqWXXStUwTV6jn97o/Av1dwDTqFCs/s2EsFnUmdoBF2kMCbtCGsI
v3wJVB/lz+eiHUSXbmEgBNtAxMQB8l2+hi5yE076tCcyeffaHmxl9HK1vxF4RUFX
CYT64DnEzMX/FUceinXWUicKswKBgQC9bCa/5ouwRio08HifIkyGGQ9ZGE3slI5B
xhVNG756mZDlSeNsTXlvcPX1K66gZH4pPStgZsTsVfIMMuaVQmGuybmd0t2X+b9M
MQuvXE5vwuLTIYpCoFoUzH/EHVP1uIY65VmbtYDYq5S1bXxabuAwO0I7JKmmORTS
PgsmBgsHJwKBgQCy3ctiNHcXe+flMTfaa+y93d/cn8/LXRqvQ+tKUmQZESN4URrX
IhUhM4n0czWEtoch98OLPrkTtKTnXFdR8AoeMa7XSMb7G0iJZEksyD6eAqGVWx48
mWk+5QYlOeOjhil/TwHqEoTRZLltEkjaT4exVVCgT7gSfl1ai3PyZskxcwKBgBBH
+HisFzuafEw6kxOSfiNUihYtWZ1JE4UhwnjzNocRJfwfQrXvXs2uVuWw0HymxpVC
1bSegLSTmo9j3J/dqcm9OwAOvM8wPzoMSSXUeEVw6dAd5OVfJP7+qMixgKLxLlBn
oDEbA60b6ldBxtt7Bjf/D+1HdHF+HIUJoimtgUsnAoGAM70bCDUbwBdY1VXEXsR1
Cixgfwaf22GfKx4wtTJtKOZxfx/sO1Y+KjgB+BbRDzczJ6vM1HwGsAE5cBw2VMeR
tPnIaDZuoAjboBbLeWT6Y4ItTC05cwK8bpvkxdJ1pNHz5osyjVqWe3PqrxXtGsSz
SLiqFICbBM9XgKrQcGxWoec=
-----END PRIVATE KEY-----
`;

/** Writes a service-account JSON file (the shape Google's key files have) and returns its path. */
export function writeServiceAccount({ privateKey = SIM_SA_PRIVATE_KEY, tokenUri, email = 'gateway@sim-project.iam.gserviceaccount.com' } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-vertex-'));
  const file = path.join(dir, 'sa.json');
  writeFileSync(file, JSON.stringify({
    type: 'service_account', project_id: 'sim-project', private_key_id: 'k1',
    private_key: privateKey, client_email: email, client_id: '1',
    token_uri: tokenUri ?? 'https://oauth2.googleapis.com/token',
  }));
  return file;
}

/** Writes <token> to a fresh file and returns its path (a workload-identity sidecar's file). */
export function writeTokenFile(token) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bascule-vertex-'));
  const file = path.join(dir, 'token');
  writeFileSync(file, `${token}\n`);
  return file;
}
