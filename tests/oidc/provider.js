// A real OpenID Connect provider for the tests: `oidc-provider` (OpenID
// Certified) on loopback http, with test users, JWT access tokens and the
// provider's development login pages. See README.md next to this file.
//
//   node tests/oidc/provider.js [--port N] [--redirect-uri URL]...
//        [--post-logout-redirect-uri URL]... [--loopback-any-port]
//
// Prints `oidc provider listening on http://127.0.0.1:PORT` once it serves;
// that URL is the issuer.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

// ---------------------------------------------------------------- options

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    'loopback-any-port': { type: 'boolean' },
    'keys-file': { type: 'string' },
  },
  strict: true,
});

const list = (value) => (value || '').split(/[\s,]+/).filter(Boolean);
const env = process.env;

const port = Number(args.port ?? env.OIDC_PORT ?? 0);
const redirectUris = [...(args['redirect-uri'] || []), ...list(env.OIDC_WEB_REDIRECT_URIS)];
const postLogoutRedirectUris = [
  ...(args['post-logout-redirect-uri'] || []),
  ...list(env.OIDC_WEB_POST_LOGOUT_REDIRECT_URIS),
];
const loopbackAnyPort = Boolean(args['loopback-any-port']) || env.OIDC_WEB_LOOPBACK_ANY_PORT === '1';
const keysFile = args['keys-file'] ?? env.OIDC_KEYS_FILE;

/** The browser client of the web chat. */
const WEB_CLIENT_ID = 'asg-web';
const WEB_CLIENT_SECRET = env.OIDC_WEB_CLIENT_SECRET || 'asg-web-test-secret';
const WEB_AUTH_METHOD = env.OIDC_WEB_TOKEN_ENDPOINT_AUTH_METHOD || 'client_secret_basic';
const WEB_ACCESS_TOKEN_TTL = Number(env.OIDC_WEB_ACCESS_TOKEN_TTL || 300);

/** Access tokens live this long unless the resource indicator says `ttl=`. */
const DEFAULT_ACCESS_TOKEN_TTL = 300;
/** The audience of the default resource (the agent's `auth.oidc.audience`). */
const DEFAULT_AUDIENCE = 'agent-stop-and-go';
const RESOURCE_PREFIX = 'urn:asg:';
const DEFAULT_RESOURCE = `${RESOURCE_PREFIX}${DEFAULT_AUDIENCE}`;

// ---------------------------------------------------------------- users

// Each user is a confidential client (client_id = user name, secret =
// `<name>-secret`, client_credentials grant) so a test gets a token with one
// POST, and an account for the browser login (any user name logs in; names
// not listed here get no roles). `roles` is a list, except for `frank`
// whose roles are one space-separated string (both forms are common).
const USERS = {
  alice: { name: 'Alice Approver', roles: ['approver'] },
  bob: { name: 'Bob User', roles: [] },
  carol: { name: 'Carol SRE', roles: ['sre'] },
  dana: { name: 'Dana Admin', roles: ['admin'] },
  erin: { name: 'Erin Approver', roles: ['approver'], alg: 'ES256' },
  frank: { name: 'Frank Spaced', roles: 'approver sre' },
  // Another approver, for four-eyes tests (alice raises, grace decides).
  grace: { name: 'Grace Approver', roles: ['approver'] },
};

function userClaims(id) {
  const user = USERS[id] || { name: id, roles: [] };
  return {
    sub: id,
    name: user.name,
    preferred_username: id,
    email: `${id}@example.test`,
    email_verified: true,
    roles: user.roles,
    groups: user.roles,
  };
}

// ---------------------------------------------------------------- keys

function thumbprint(jwk) {
  const members = jwk.kty === 'RSA'
    ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
    : { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y };
  return crypto.createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

function generateKeys() {
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ format: 'jwk' });
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ format: 'jwk' });
  return [
    { ...rsa, alg: 'RS256', use: 'sig', kid: thumbprint(rsa) },
    { ...ec, alg: 'ES256', use: 'sig', kid: thumbprint(ec) },
  ];
}

// Fresh keys on every start, unless a keys file names keys to keep across
// restarts (written on first use).
function loadKeys() {
  if (keysFile && fs.existsSync(keysFile)) {
    return JSON.parse(fs.readFileSync(keysFile, 'utf8')).keys;
  }
  const keys = generateKeys();
  if (keysFile) fs.writeFileSync(keysFile, JSON.stringify({ keys }), { mode: 0o600 });
  return keys;
}

// ---------------------------------------------------------------- resources

// Resource indicators (RFC 8707) must be absolute URIs, so a resource is
// `urn:asg:<audience>[?alg=ES256&ttl=SECONDS]`; the token's `aud` is
// <audience>. Without a `resource` parameter the default resource
// (audience agent-stop-and-go) is used.
function resourceServerInfo(resource, client) {
  if (!resource.startsWith(RESOURCE_PREFIX)) return undefined;
  const url = new URL(resource);
  const audience = url.pathname.slice('asg:'.length);
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(audience)) return undefined;
  const user = USERS[client?.clientId];
  const alg = url.searchParams.get('alg') || user?.alg || 'RS256';
  if (!['RS256', 'ES256'].includes(alg)) return undefined;
  const ttlParam = url.searchParams.get('ttl');
  let ttl = client?.clientId === WEB_CLIENT_ID ? WEB_ACCESS_TOKEN_TTL : DEFAULT_ACCESS_TOKEN_TTL;
  if (ttlParam !== null) {
    ttl = Number(ttlParam);
    if (!Number.isInteger(ttl) || ttl < 1) return undefined;
  }
  return {
    // The OpenID scopes too, so the browser client's access tokens say what
    // was granted (`scope` claim and token response) like Keycloak's do.
    scope: 'api openid profile email offline_access',
    audience,
    accessTokenTTL: ttl,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg } },
  };
}

// ---------------------------------------------------------------- clients

const clients = Object.keys(USERS).map((id) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'client_secret_basic',
}));

clients.push({
  client_id: WEB_CLIENT_ID,
  client_secret: WEB_CLIENT_SECRET,
  client_name: 'Agent Stop and Go web chat',
  // `native` only to get RFC 8252 loopback redirects (any port on
  // 127.0.0.1), for tests that cannot know the web server's port first.
  application_type: loopbackAnyPort ? 'native' : 'web',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  redirect_uris: redirectUris.length ? redirectUris : ['http://127.0.0.1/no-redirect-uri-configured'],
  post_logout_redirect_uris: postLogoutRedirectUris,
  token_endpoint_auth_method: WEB_AUTH_METHOD,
  scope: 'openid profile email offline_access',
});

// The terminal client `asg` (cli/): a public client that signs in with the
// device authorization grant (RFC 8628, `asg login`).
clients.push({
  client_id: 'asg-cli',
  client_name: 'asg terminal client',
  application_type: 'native',
  grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'none',
});

// ---------------------------------------------------------------- provider

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const configuration = {
  clients,
  jwks: { keys: loadKeys() },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return userClaims(id);
      },
    };
  },
  claims: {
    openid: ['sub'],
    profile: ['name', 'preferred_username', 'roles', 'groups'],
    email: ['email', 'email_verified'],
  },
  // The ID token carries the profile claims (roles, name) even when an
  // access token is issued too, so the web server needs no userinfo call.
  conformIdTokenClaims: false,
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    // For `asg login` (the page a person opens: /device).
    deviceFlow: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf || DEFAULT_RESOURCE,
      // The browser client's code and refresh grants get the JWT access
      // token of the default resource without sending `resource`.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource, client) => {
        const info = resourceServerInfo(resource, client);
        if (!info) throw new Provider.errors.InvalidTarget(`unknown resource ${resource}`);
        return info;
      },
    },
  },
  async extraTokenClaims(ctx, token) {
    const id = token.accountId || token.clientId;
    if (id === WEB_CLIENT_ID) return undefined;
    const { sub, ...claims } = userClaims(id);
    return claims;
  },
  pkce: {
    // PKCE is mandatory for the browser client too (not only for public
    // clients, the library's default).
    required: (ctx, client) => client.clientId === WEB_CLIENT_ID || client.clientAuthMethod === 'none',
  },
  // Like Keycloak, the browser client gets a refresh token with every code
  // grant; the spec's rule (offline_access only together with
  // prompt=consent, OpenID Connect Core 11) still applies to other clients.
  issueRefreshToken: async (ctx, client, source) => client.grantTypeAllowed('refresh_token')
    && (source.scopes.has('offline_access') || client.clientId === WEB_CLIENT_ID),
  clientBasedCORS: () => true,
  ttl: {
    AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL || DEFAULT_ACCESS_TOKEN_TTL,
    ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL || DEFAULT_ACCESS_TOKEN_TTL,
    IdToken: 3600,
    RefreshToken: 24 * 3600,
    Interaction: 3600,
    Session: 24 * 3600,
    Grant: 24 * 3600,
  },
  renderError: async (ctx, out) => {
    ctx.type = 'html';
    const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    ctx.body = `<!DOCTYPE html><html><head><title>oidc error</title></head><body><h1>oidc error</h1><pre id="error">${
      Object.entries(out).map(([k, v]) => `${escape(k)}: ${escape(v)}`).join('\n')}</pre></body></html>`;
  },
};

const provider = new Provider(issuer, configuration);
provider.on('server_error', (ctx, error) => console.error('oidc provider server_error:', error));
provider.on('grant.error', (ctx, error) => console.error('oidc provider grant.error:', error.message, error.error_description ?? ''));
provider.on('authorization.error', (ctx, error) => console.error('oidc provider authorization.error:', error.message, error.error_description ?? ''));

server.on('request', provider.callback());

// The test that started us holds our stdin; when it goes away, so do we.
if (env.OIDC_EXIT_ON_STDIN_EOF === '1') {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => process.exit(0));
}

console.log(`oidc provider listening on ${issuer}`);
