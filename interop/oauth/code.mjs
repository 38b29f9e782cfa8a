// `snodo client --oauth` against oidc-provider with a real authorization-code login
// (run by run.sh after lane.mjs, against the same provider and snodo server). This
// script plays the browser: it reads the authorization URL `snodo client` prints,
// follows the provider's redirects with a cookie jar, submits the provider's login form
// (any login and password: devInteractions) and consent form, and delivers the final
// redirect to the client's loopback listener. Steps:
//
//   1. login: DCR, PKCE, resource, iss; the token file gets the tokens (mode 0600);
//   2. reuse: a second `snodo client` run uses the stored token (no browser);
//   3. refresh after expiry: the stored token is marked expired; the next run refreshes
//      it (no browser) and the provider rotates the refresh token, which is stored;
//   4. step-up: `call search` needs files:read (snodo --oauth-tool-scope): 403
//      insufficient_scope -> a second login for the union of scopes -> the call works;
//   5. DPoP: a token bound to the client's key, accepted with proofs, refused as Bearer;
//   6. nothing secret on the client's stderr.
//
// Environment: SNODO_BIN, MCP_URL, ISSUER, WORK (a folder for the token file).
// Ends with "N passed, M failed".
import { spawn } from 'node:child_process';
import { createHash, createPrivateKey, createPublicKey, randomUUID, sign } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';

import { check, finish } from './checks.mjs';

const bin = process.env.SNODO_BIN;
const mcpUrl = process.env.MCP_URL;
const issuer = process.env.ISSUER;
const tokenFile = `${process.env.WORK}/tokens.json`;

// --- the browser -------------------------------------------------------------------

const jar = new Map();
function remember(res) {
  for (const c of res.headers.getSetCookie?.() ?? []) {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    jar.set(pair.slice(0, i).trim(), pair.slice(i + 1));
  }
}
function cookies() {
  return [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
}

/** Walks from the authorization URL to the loopback redirect; returns the pages seen. */
async function browse(startUrl) {
  const seen = [];
  let url = startUrl;
  let init = { method: 'GET' };
  for (let hop = 0; hop < 20; hop += 1) {
    if (url.startsWith('http://127.0.0.1:') && new URL(url).pathname === '/callback') {
      const res = await fetch(url);
      seen.push(`callback ${res.status}`);
      return seen;
    }
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers ?? {}), cookie: cookies() },
    });
    remember(res);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location'), url).toString();
      init = { method: 'GET' };
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (!action || !prompt) {
      seen.push(`stuck at HTTP ${res.status}: ${html.slice(0, 200)}`);
      return seen;
    }
    seen.push(prompt);
    const form = new URLSearchParams({ prompt });
    if (prompt === 'login') {
      form.set('login', 'lane-user');
      form.set('password', 'any');
    }
    url = new URL(action.replaceAll('&amp;', '&'), url).toString();
    init = {
      method: 'POST',
      body: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    };
  }
  seen.push('too many hops');
  return seen;
}

// --- snodo client ------------------------------------------------------------------

/** Runs `snodo client`, logging in through `browse` whenever it prints a URL. */
function client(args, file = tokenFile) {
  return new Promise((resolve) => {
    const child = spawn(
      bin,
      ['client', '--url', mcpUrl, '--oauth', '--token-file', file, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    const logins = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    const started = new Set();
    child.stderr.on('data', (d) => {
      stderr += d;
      for (const m of stderr.matchAll(/^\s+(http\S+\/auth\?\S+)\n/gm)) {
        if (!started.has(m[1])) {
          started.add(m[1]);
          logins.push(browse(m[1]));
        }
      }
    });
    child.on('close', async (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, logins: await Promise.all(logins) });
    });
  });
}

function stored(file = tokenFile) {
  try {
    const t = JSON.parse(readFileSync(file, 'utf8'));
    return Object.values(t.tokens ?? {})[0];
  } catch {
    return undefined;
  }
}

const secrets = new Set();
function collect() {
  const t = stored();
  if (t?.access_token) secrets.add(t.access_token);
  if (t?.refresh_token) secrets.add(t.refresh_token);
}

console.log(`--- snodo client --oauth against ${issuer} (authorization code, a real login)`);

// 1. login
const first = await client(['tools/list']);
console.log(`  logins: ${JSON.stringify(first.logins)}`);
check('first run logs in through the provider\'s login and consent pages',
  first.logins.length === 1 && first.logins[0].includes('login') && first.logins[0].includes('consent'),
  JSON.stringify(first.logins));
check('first run lists the tools', first.code === 0 && first.stdout.includes('"tools"'),
  `exit ${first.code}: ${first.stderr.slice(-300)}`);
const t1 = stored();
collect();
check('the token file holds a token for the resource, from the issuer',
  t1?.issuer === issuer && t1?.resource === mcpUrl && typeof t1?.refresh_token === 'string',
  JSON.stringify({ issuer: t1?.issuer, resource: t1?.resource, refresh: typeof t1?.refresh_token }));
const mode = statSync(tokenFile).mode & 0o777;
check('the token file is mode 0600', mode === 0o600, mode.toString(8));

// 2. reuse
const second = await client(['tools/list']);
check('second run reuses the stored token (no login)',
  second.code === 0 && second.logins.length === 0 && stored()?.access_token === t1?.access_token,
  `exit ${second.code}, logins ${second.logins.length}`);

// 3. refresh after expiry (the file says it expired; the provider rotates the refresh token)
const file = JSON.parse(readFileSync(tokenFile, 'utf8'));
for (const t of Object.values(file.tokens)) t.expires_at = Math.floor(Date.now() / 1000) - 1;
writeFileSync(tokenFile, JSON.stringify(file));
const third = await client(['tools/list']);
const t3 = stored();
collect();
check('an expired token is refreshed without a login',
  third.code === 0 && third.logins.length === 0 && t3?.access_token !== t1?.access_token,
  `exit ${third.code}, logins ${third.logins.length}: ${third.stderr.slice(-300)}`);
check('the rotated refresh token is stored', t3?.refresh_token && t3.refresh_token !== t1?.refresh_token);

// 4. step-up: search needs files:read
const fourth = await client(['call', 'search', 'query=hello']);
const t4 = stored();
collect();
console.log(`  logins: ${JSON.stringify(fourth.logins)}`);
check('a 403 insufficient_scope leads to a second login and the call succeeds',
  fourth.code === 0 && fourth.logins.length === 1 && fourth.stdout.includes('hello'),
  `exit ${fourth.code}, logins ${fourth.logins.length}: ${fourth.stderr.slice(-300)}`);
check('the new grant covers the union of scopes',
  /\bmcp\b/.test(t4?.scope ?? '') && /files:read/.test(t4?.scope ?? ''), t4?.scope);

/** An ES256 DPoP proof (RFC 9449) for POST `htu` with `token`, by the PKCS#8 PEM key. */
function dpopProof(pem, htu, token, nonce) {
  const key = createPrivateKey(pem);
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const claims = {
    jti: randomUUID(), htm: 'POST', htu, iat: Math.floor(Date.now() / 1000),
    ath: createHash('sha256').update(token).digest('base64url'),
    ...(nonce ? { nonce } : {}),
  };
  const input = `${b64({ typ: 'dpop+jwt', alg: 'ES256', jwk })}.${b64(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

// 5. DPoP end to end: oidc-provider binds the token to the client's key (cnf.jkt),
// snodo (--oauth-dpop --oauth-dpop-nonce) checks each request's proof and asks for its
// nonce (401 use_dpop_nonce + DPoP-Nonce: the client retries once with it); the same
// token as Bearer is refused.
const dpopFile = `${process.env.WORK}/tokens-dpop.json`;
const fifth = await client(['--dpop', 'tools/list'], dpopFile);
const t5 = stored(dpopFile);
if (t5?.access_token) secrets.add(t5.access_token);
check('with --dpop the login yields a DPoP-bound token and the call works',
  fifth.code === 0 && fifth.logins.length === 1 && t5?.token_type === 'DPoP',
  `exit ${fifth.code}, type ${t5?.token_type}: ${fifth.stderr.slice(-300)}`);
const claims = JSON.parse(Buffer.from((t5?.access_token ?? '..').split('.')[1] ?? '', 'base64url').toString() || '{}');
check('the access token names its key (cnf.jkt)', typeof claims?.cnf?.jkt === 'string');
const asBearer = await fetch(mcpUrl, {
  method: 'POST',
  headers: {
    authorization: `Bearer ${t5?.access_token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
  },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
});
check('the DPoP-bound token without its proof is refused', asBearer.status === 401, `HTTP ${asBearer.status}`);

// The nonce round by hand, with the key the client stored: a proof without a nonce gets
// 401 use_dpop_nonce and a DPoP-Nonce; the same request with it in a new proof is a 200.
const dpopKey = Object.values(JSON.parse(readFileSync(dpopFile, 'utf8')).tokens)[0]?.dpop_key;
const byHand = async (nonce) => fetch(mcpUrl, {
  method: 'POST',
  headers: {
    authorization: `DPoP ${t5?.access_token}`,
    dpop: dpopProof(dpopKey, mcpUrl, t5?.access_token ?? '', nonce),
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
  },
  body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
});
const noNonce = await byHand(undefined);
const serverNonce = noNonce.headers.get('dpop-nonce');
check('a proof without the server nonce: 401 use_dpop_nonce with a DPoP-Nonce',
  noNonce.status === 401 && /use_dpop_nonce/.test(noNonce.headers.get('www-authenticate') ?? '')
    && !!serverNonce,
  `HTTP ${noNonce.status} ${noNonce.headers.get('www-authenticate')}`);
const withNonce = await byHand(serverNonce);
check('the same request with the nonce in a fresh proof is served', withNonce.status === 200,
  `HTTP ${withNonce.status} ${withNonce.headers.get('www-authenticate')}`);

// The key is kept with the token: a later run refreshes the expired DPoP-bound token.
const dfile = JSON.parse(readFileSync(dpopFile, 'utf8'));
for (const t of Object.values(dfile.tokens)) t.expires_at = Math.floor(Date.now() / 1000) - 1;
writeFileSync(dpopFile, JSON.stringify(dfile));
const sixth = await client(['--dpop', 'tools/list'], dpopFile);
const t6 = stored(dpopFile);
if (t6?.access_token) secrets.add(t6.access_token);
check('a later --dpop run refreshes the bound token with the stored key (no login)',
  sixth.code === 0 && sixth.logins.length === 0 && t6?.access_token !== t5?.access_token
    && t6?.token_type === 'DPoP',
  `exit ${sixth.code}, logins ${sixth.logins.length}: ${sixth.stderr.slice(-300)}`);

// 6. no secret on stderr
const allErr = [first, second, third, fourth, fifth, sixth].map((r) => r.stderr).join('\n');
check('no token on the client\'s stderr', ![...secrets].some((s) => allErr.includes(s)));

finish();
