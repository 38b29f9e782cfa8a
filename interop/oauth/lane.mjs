// The exchanges of the OAuth lane (run by run.sh, which starts the provider and snodo):
// raw HTTP first (401 challenge, protected-resource metadata at both well-known paths,
// client-credentials tokens from the provider, the step-up 403 -> union token -> 200),
// then the official TypeScript SDK client doing the same by itself (its
// ClientCredentialsProvider: 401 -> metadata -> token -> initialize; 403
// insufficient_scope -> token with the challenge's scopes -> call), then key rotation at
// the provider, picked up by the running snodo. Each exchange is printed as its request
// line, status and key headers; tokens are shown by kid, scope and a short SHA-256
// fingerprint only. Ends with "N passed, M failed".
//
// Environment: MCP_URL, ISSUER, CLIENT_ID, CLIENT_SECRET, PROVIDER_PID (for the
// rotation signal), AS_LOG (the provider's request log), SNODO_LOG (snodo's stderr), JWKS_READY_AT (ms since the epoch after which snodo may fetch the
// JWKS again: its minimum refetch interval after its start-up fetch).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

import { check, finish } from './checks.mjs';

const mcpUrl = process.env.MCP_URL;
const issuer = process.env.ISSUER;
const clientId = process.env.CLIENT_ID;
const clientSecret = process.env.CLIENT_SECRET;
const providerPid = Number(process.env.PROVIDER_PID);
const jwksReadyAt = Number(process.env.JWKS_READY_AT);
const asLog = process.env.AS_LOG;
const origin = new URL(mcpUrl).origin;

/** snodo's stderr so far (its request log), or '' without SNODO_LOG. */
function snodoLog() {
  try {
    return readFileSync(process.env.SNODO_LOG ?? '', 'utf8');
  } catch {
    return '';
  }
}

// --- printing ------------------------------------------------------------------

function decodePart(part) {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return {};
  }
}

/** A token as it may be printed: kid, scope, audience, fingerprint. Never the token. */
function describeToken(token) {
  const [h, p] = token.split('.');
  const header = decodePart(h ?? '');
  const claims = decodePart(p ?? '');
  const fp = createHash('sha256').update(token).digest('hex').slice(0, 8);
  return `<${header.typ ?? '?'} kid=${header.kid} scope="${claims.scope}" aud=${claims.aud} sha256:${fp}>`;
}

function describeAuthorization(value) {
  if (!value) return undefined;
  const [scheme, token] = value.split(' ');
  if (scheme === 'Basic') return 'Basic <client credentials>';
  return token ? `${scheme} ${describeToken(token)}` : value;
}

const KEY_HEADERS = ['www-authenticate', 'content-type', 'mcp-session-id', 'cache-control'];

function headerOf(init, name) {
  const h = init?.headers;
  if (!h) return undefined;
  if (h instanceof Headers) return h.get(name) ?? undefined;
  if (Array.isArray(h)) return h.find(([k]) => k.toLowerCase() === name)?.[1];
  const key = Object.keys(h).find((k) => k.toLowerCase() === name);
  return key ? h[key] : undefined;
}

/** fetch that prints the exchange: request line, key request headers, status, key headers. */
function tracingFetch(label) {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = init?.method ?? 'GET';
    let line = `${label}> ${method} ${url}`;
    let body = '';
    if (typeof init?.body === 'string') body = init.body;
    else if (init?.body instanceof URLSearchParams) body = init.body.toString();
    if (url.startsWith(mcpUrl) && body) {
      try {
        const m = JSON.parse(body);
        line += `  [${m.method}${m.params?.name ? ` ${m.params.name}` : ''}]`;
      } catch {
        // not JSON
      }
    }
    if (body.includes('grant_type=')) {
      const form = new URLSearchParams(body);
      line += `  [grant_type=${form.get('grant_type')} scope="${form.get('scope') ?? ''}" resource=${form.get('resource') ?? ''}]`;
    }
    console.log(line);
    const auth = describeAuthorization(headerOf(init, 'authorization'));
    if (auth) console.log(`${label}>   Authorization: ${auth}`);
    const res = await fetch(input, init);
    console.log(`${label}< ${res.status} ${res.statusText}`);
    for (const h of KEY_HEADERS) {
      const v = res.headers.get(h);
      if (v) console.log(`${label}<   ${h}: ${v}`);
    }
    if (url.includes('/token') && res.ok) {
      const j = await res.clone().json().catch(() => ({}));
      if (j.access_token) {
        console.log(`${label}<   token: ${describeToken(j.access_token)} expires_in=${j.expires_in}`);
      }
    }
    return res;
  };
}

const raw = tracingFetch('');

function mcpBody(id, method, params = {}) {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
}

async function callSearch(token, id) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': 'search',
  };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await raw(mcpUrl, {
    method: 'POST',
    headers,
    body: mcpBody(id, 'tools/call', { name: 'search', arguments: { query: 'hello' } }),
  });
  return { res, json: await res.json().catch(() => undefined) };
}

async function token(scope, resource = mcpUrl) {
  const res = await raw(tokenEndpoint, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }),
  });
  const j = await res.json().catch(() => ({}));
  check(`client-credentials grant for "${scope}" at ${resource} -> 200 Bearer`, res.status === 200 && j.token_type === 'Bearer', `${res.status}`);
  return j.access_token ?? '';
}

function param(challenge, name) {
  const m = new RegExp(`${name}="([^"]*)"`).exec(challenge ?? '');
  return m ? m[1] : undefined;
}

function section(title) {
  console.log(`\n=== ${title}`);
}

const metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;
let tokenEndpoint = '';

// --- 1. no token: 401 with the metadata --------------------------------------------
section('1. no token: 401 challenge');
{
  const { res, json } = await callSearch(undefined, 1);
  const c = res.headers.get('www-authenticate');
  check('401 without a token', res.status === 401, `${res.status}`);
  check('challenge names resource_metadata', param(c, 'resource_metadata') === metadataUrl, c);
  check('challenge suggests scope="mcp"', param(c, 'scope') === 'mcp', c);
  check('no error= when no token was sent', !/error=/.test(c ?? ''), c);
  check('JSON-RPC error body', json?.error?.code === -32600, JSON.stringify(json));
}

// --- 2. protected-resource metadata ------------------------------------------------
section('2. protected resource metadata (RFC 9728) at both well-known paths');
for (const url of [metadataUrl, `${origin}/.well-known/oauth-protected-resource`]) {
  const res = await raw(url);
  const doc = await res.json().catch(() => ({}));
  console.log(`<   ${JSON.stringify(doc)}`);
  check(`${new URL(url).pathname} -> 200`, res.status === 200, `${res.status}`);
  check('resource is the canonical URI of /mcp', doc.resource === mcpUrl, doc.resource);
  check('authorization_servers names the issuer', doc.authorization_servers?.[0] === issuer);
  check('bearer_methods_supported is ["header"]', JSON.stringify(doc.bearer_methods_supported) === '["header"]');
  check('scopes_supported has mcp and files:read', ['mcp', 'files:read'].every((s) => doc.scopes_supported?.includes(s)));
}

// --- 3. the provider's metadata ----------------------------------------------------
section('3. the authorization server (oidc-provider) metadata');
{
  const res = await raw(`${issuer}/.well-known/openid-configuration`);
  const doc = await res.json().catch(() => ({}));
  tokenEndpoint = doc.token_endpoint;
  console.log(`<   issuer=${doc.issuer} token_endpoint=${doc.token_endpoint} jwks_uri=${doc.jwks_uri}`);
  check('issuer metadata -> 200', res.status === 200 && doc.issuer === issuer);
}

// --- 4. step-up by hand --------------------------------------------------------------
section('4. step-up: token with "mcp" -> 403 insufficient_scope -> token with the union -> 200');
let unionToken = '';
{
  const narrow = await token('mcp');
  const first = await callSearch(narrow, 2);
  const c = first.res.headers.get('www-authenticate');
  check('403 for search with scope "mcp"', first.res.status === 403, `${first.res.status}`);
  check('error="insufficient_scope"', param(c, 'error') === 'insufficient_scope', c);
  check('challenge names every scope the call needs: "mcp files:read"', param(c, 'scope') === 'mcp files:read', c);
  check('challenge names resource_metadata', param(c, 'resource_metadata') === metadataUrl, c);
  unionToken = await token(param(c, 'scope') ?? 'mcp files:read');
  const second = await callSearch(unionToken, 3);
  const text = second.json?.result?.content?.[0]?.text ?? '';
  console.log(`<   result: ${text.slice(0, 120)}`);
  check('200 with the union token', second.res.status === 200 && second.json?.result !== undefined, `${second.res.status}`);
  check('the search found hello.txt', text.includes('hello.txt'), text);
}

// --- 5. invalid tokens --------------------------------------------------------------
section('5. a tampered token (scope widened, signature kept): 401 invalid_token');
{
  const parts = unionToken.split('.');
  const claims = decodePart(parts[1]);
  claims.scope = 'mcp files:read admin';
  const tampered = `${parts[0]}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${parts[2]}`;
  const { res } = await callSearch(tampered, 4);
  const c = res.headers.get('www-authenticate');
  check('tampered claims -> 401 error="invalid_token"', res.status === 401 && param(c, 'error') === 'invalid_token', `${res.status} ${c}`);
}

section('5b. audience binding: a valid token of the same provider for another resource -> 401');
{
  const elsewhere = await token('mcp files:read', `${origin}/other-mcp`);
  const { res } = await callSearch(elsewhere, 6);
  const c = res.headers.get('www-authenticate');
  check('token for /other-mcp -> 401 invalid_token', res.status === 401 && param(c, 'error') === 'invalid_token', `${res.status} ${c}`);
  check('the description names the audience', /not issued for this resource/.test(param(c, 'error_description') ?? ''), c);
}

// --- 6. the official SDK client does it all by itself -------------------------------

/**
 * The SDK's ClientCredentialsProvider, asking for the scopes of the latest challenge.
 * SDK 1.32.2 resolves the challenge's scope (SEP-835) but its client-credentials
 * token request sends `clientMetadata.scope` instead (client/auth.js fetchToken), so
 * a step-up would ask for the same token again; this adopts the challenge's scope.
 */
class StepUpClientCredentials extends ClientCredentialsProvider {
  challengeScope = undefined;

  get clientMetadata() {
    const base = super.clientMetadata;
    return this.challengeScope ? { ...base, scope: this.challengeScope } : base;
  }
}

async function sdkRun(label, scope) {
  const authProvider = new StepUpClientCredentials({
    clientId,
    clientSecret,
    expectedIssuer: issuer,
    clientName: 'snodo-oauth-lane',
    scope,
  });
  const traced = tracingFetch(label);
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    authProvider,
    fetch: async (input, init) => {
      const res = await traced(input, init);
      const challenged = param(res.headers.get('www-authenticate'), 'scope');
      if ((res.status === 401 || res.status === 403) && challenged) {
        authProvider.challengeScope = challenged;
      }
      return res;
    },
  });
  const client = new Client({ name: 'snodo-oauth-lane', version: '0.0.0' });
  try {
    await client.connect(transport);
    check(`${label}: connected (${client.getServerVersion()?.name})`, true);
    const result = await client.callTool({ name: 'search', arguments: { query: 'hello' } });
    const text = result.content?.[0]?.text ?? '';
    console.log(`${label}<   result: ${text.slice(0, 120)}`);
    check(`${label}: protected tool search answered`, !result.isError && text.includes('hello.txt'), text);
    return authProvider.tokens()?.access_token ?? '';
  } catch (e) {
    check(`${label}: SDK flow`, false, e?.message ?? String(e));
    return '';
  } finally {
    await client.close().catch(() => {});
  }
}

section('6. official TypeScript SDK client (1.32.2, ClientCredentialsProvider): 401 -> metadata -> token -> initialize; 403 -> step-up -> call');
const logFrom = snodoLog().length;
const before = await sdkRun('sdk', undefined);
{
  // The SDK's metadata probe is a path other than /mcp: snodo's request log has a line
  // for it (it had none before issue 37), as for the MCP requests.
  await new Promise((r) => setTimeout(r, 200));
  const probes = snodoLog()
    .slice(logFrom)
    .split('\n')
    .filter((l) => l.includes('snodo::request') && l.includes('path="/.well-known/oauth-protected-resource'));
  for (const l of probes) console.log(`    snodo log: ${l.slice(l.indexOf('snodo::request'))}`);
  check(
    "snodo's request log has a line for the SDK's .well-known probe (GET, 200)",
    probes.some((l) => l.includes('http_method="GET"') && l.includes('status=200')),
    `${probes.length} lines`,
  );
}
const kidBefore = decodePart(before.split('.')[0] ?? '').kid;
check('the SDK ended with a token holding the union of scopes', decodePart(before.split('.')[1] ?? '').scope === 'mcp files:read');

// --- 7. key rotation at the provider -----------------------------------------------
section('7. key rotation at the provider (SIGUSR2), snodo not restarted');
{
  process.kill(providerPid, 'SIGUSR2');
  // The lane's own polls carry ?lane, so that snodo's fetches stand out in the log.
  const jwksUri = `${issuer}/jwks?lane`;
  let kids = [];
  for (let i = 0; i < 50; i += 1) {
    const j = await fetch(jwksUri).then((r) => r.json()).catch(() => ({ keys: [] }));
    kids = j.keys.map((k) => k.kid);
    if (kids.length > 1) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(`    provider JWKS now publishes: ${kids.join(', ')}`);
  check('the provider publishes a new key', kids.length === 2 && kids[1] === kidBefore, kids.join(','));
  const wait = jwksReadyAt - Date.now();
  if (wait > 0) {
    console.log(`    waiting ${Math.ceil(wait / 1000)} s: snodo refetches a JWKS for an unknown kid at most once per 30 s`);
    await new Promise((r) => setTimeout(r, wait));
  }
  const after = await sdkRun('sdk-rotated', 'mcp files:read');
  const kidAfter = decodePart(after.split('.')[0] ?? '').kid;
  check(`the new token is signed with the new key (${kidAfter}, was ${kidBefore})`, !!kidAfter && kidAfter !== kidBefore);
  const log = readFileSync(asLog, 'utf8');
  const afterRotation = log.slice(log.indexOf('as: rotated'));
  check('snodo fetched the JWKS again for the unknown kid', /as: GET \/jwks -> 200/.test(afterRotation));
  const old = await callSearch(unionToken, 5);
  check('a token signed with the previous key (still published) still serves', old.res.status === 200, `${old.res.status}`);
}

finish('oauth lane');
