// The authorization server of the OAuth lane: oidc-provider (a certified OpenID
// provider) on 127.0.0.1, with resource indicators (RFC 8707) and JWT access tokens
// (RFC 9068) for the snodo endpoint (and one other resource), one confidential client
// allowed the client-credentials grant, and — for `snodo client --oauth` (code.mjs) —
// dynamic client registration, the provider's own login and consent pages
// (devInteractions: any login and password), and refresh tokens for clients registered
// with the refresh_token grant (rotated for public clients, the provider's default).
//
// Environment: PORT (listen port), RESOURCE (canonical URI of snodo's /mcp),
// OTHER_RESOURCE (a second resource of the same server, to show audience binding),
// CLIENT_ID, CLIENT_SECRET, SCOPES (space-separated, what the resource accepts).
//
// SIGUSR2 rotates the signing key: a fresh RS256 key (new kid) signs from then on, the
// previous one stays published so that tokens already issued still verify. Every
// request is logged to stderr as "as: METHOD PATH -> STATUS".
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';

import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.PORT);
const resource = process.env.RESOURCE;
const otherResource = process.env.OTHER_RESOURCE;
const clientId = process.env.CLIENT_ID;
const clientSecret = process.env.CLIENT_SECRET;
const scopes = process.env.SCOPES;
const issuer = `http://127.0.0.1:${port}`;

let generation = 0;
function newKey() {
  generation += 1;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `lane-key-${generation}`, alg: 'RS256', use: 'sig' };
}

function provider(keys) {
  const p = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: scopes,
      },
    ],
    scopes: scopes.split(' '),
    jwks: { keys },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      dPoP: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource && indicator !== otherResource) {
            throw new errors.InvalidTarget();
          }
          return {
            scope: scopes,
            audience: indicator,
            accessTokenTTL: 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  });
  // Silence the provider's development-mode notices about its defaults.
  p.on('server_error', (_ctx, err) => console.error(`as: server_error ${err.message}`));
  return p;
}

let keys = [newKey()];
let callback = provider(keys).callback();

process.on('SIGUSR2', () => {
  keys = [newKey(), keys[0]];
  callback = provider(keys).callback();
  console.error(`as: rotated: signing with ${keys[0].kid}, still publishing ${keys[1].kid}`);
});
process.on('SIGTERM', () => process.exit(0));

http
  .createServer((req, res) => {
    res.on('finish', () => console.error(`as: ${req.method} ${req.url} -> ${res.statusCode}`));
    callback(req, res);
  })
  .listen(port, '127.0.0.1', () => console.error(`as: ${issuer} ready, signing with ${keys[0].kid}`));
