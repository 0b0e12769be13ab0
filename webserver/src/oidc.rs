//! Sign-in for the browser: the authorization code flow with PKCE (S256)
//! against an OpenID Connect provider (discovery, `state` and `nonce`,
//! ID token verified with the provider's keys) or, with the `oauth2:`
//! block, against plain OAuth2 endpoints (no ID token; the user is who the
//! agent's `GET /me` says the access token belongs to). Built on the
//! `openidconnect` crate, with the workspace's reqwest as HTTP client
//! (no redirects followed). Refresh (refresh_token grant), revocation
//! (RFC 7009) and RP-initiated logout (`end_session_endpoint`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthenticationFlow, CoreClaimName, CoreClaimType, CoreClient,
    CoreClientAuthMethod, CoreGrantType, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm, CoreJwsSigningAlgorithm, CoreResponseMode, CoreResponseType,
    CoreSubjectIdentifierType, CoreTokenResponse,
};
use openidconnect::{
    AccessTokenHash, AdditionalProviderMetadata, AsyncHttpClient, AuthType, AuthUrl,
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet, EndpointSet, HttpRequest,
    HttpResponse, IssuerUrl, JsonWebKeySet, Nonce, OAuth2TokenResponse, PkceCodeChallenge,
    PkceCodeVerifier, ProviderMetadata, RedirectUrl, RefreshToken, Scope, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use super::session::{PendingLogin, SessionUser, Tokens};

/// How long discovered endpoints and keys are kept before they are read
/// again.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);
/// Timeout of each request to the provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(15);

/// Where and how to sign in, from `web.yaml`.
#[derive(Clone)]
pub struct LoginSettings {
    /// OpenID Connect (discovery) or plain OAuth2 endpoints.
    pub provider: ProviderKind,
    /// The client id.
    pub client_id: String,
    /// The client secret (confidential client), if any.
    pub client_secret: Option<String>,
    /// `redirect_url`: this server's `/auth/callback`.
    pub redirect_url: String,
    /// Scopes asked for.
    pub scopes: Vec<String>,
    /// Where the provider sends the browser after RP-initiated logout.
    pub post_logout_redirect_url: Option<String>,
}

impl std::fmt::Debug for LoginSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginSettings")
            .field("provider", &self.provider)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("redirect_url", &self.redirect_url)
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// The kind of provider.
#[derive(Debug, Clone)]
pub enum ProviderKind {
    /// OpenID Connect: everything from `{issuer}/.well-known/openid-configuration`.
    Oidc {
        /// The issuer URL.
        issuer: String,
    },
    /// Plain OAuth2 endpoints (the reference implementation's `oauth2:`).
    OAuth2 {
        /// Authorization endpoint.
        auth_url: String,
        /// Token endpoint.
        token_url: String,
        /// Revocation endpoint (RFC 7009), if any.
        revoke_url: Option<String>,
    },
}

/// A sign-in failure; the text names the problem and never holds a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginError(pub String);

impl std::fmt::Display for LoginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail(what: &str, e: impl std::fmt::Display) -> LoginError {
    LoginError(format!("{what}: {e}"))
}

/// Discovery extras the core metadata type does not read.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct LogoutMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revocation_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end_session_endpoint: Option<String>,
}
impl AdditionalProviderMetadata for LogoutMetadata {}

type Discovery = ProviderMetadata<
    LogoutMetadata,
    CoreAuthDisplay,
    CoreClientAuthMethod,
    CoreClaimName,
    CoreClaimType,
    CoreGrantType,
    CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm,
    CoreJsonWebKey,
    CoreResponseMode,
    CoreResponseType,
    CoreSubjectIdentifierType,
>;

/// The client with its authorization and token endpoints set.
type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
    EndpointNotSet,
>;

/// What discovery (or the `oauth2:` block) gave.
struct Endpoints {
    client: Client,
    /// OpenID Connect: an ID token is required and verified.
    oidc: bool,
    /// ID token signing algorithms the provider announces.
    algs: Vec<CoreJwsSigningAlgorithm>,
    revocation: Option<String>,
    end_session: Option<String>,
    auth_type: AuthType,
    fetched: Instant,
}

/// The HTTP client handed to `openidconnect`: the workspace's reqwest,
/// no redirects (as the crate's documentation asks, against SSRF).
#[derive(Clone)]
pub struct Http(reqwest::Client);

impl Http {
    fn new() -> Http {
        Http(
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(PROVIDER_TIMEOUT)
                .build()
                .unwrap_or_default(),
        )
    }
}

/// An error of the provider HTTP client.
#[derive(Debug)]
pub struct HttpError(String);
impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for HttpError {}

impl<'c> AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let response = self
                .0
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await
                .map_err(|e| HttpError(e.without_url().to_string()))?;
            let mut builder = openidconnect::http::Response::builder().status(response.status());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let bytes = response
                .bytes()
                .await
                .map_err(|e| HttpError(e.without_url().to_string()))?;
            builder
                .body(bytes.to_vec())
                .map_err(|e| HttpError(e.to_string()))
        })
    }
}

/// The sign-in machinery of the web server.
pub struct Login {
    settings: LoginSettings,
    http: Http,
    endpoints: Mutex<Option<Arc<Endpoints>>>,
}

impl Login {
    /// A login with these settings; the provider is contacted on first use
    /// (an unreachable provider at startup is not fatal).
    pub fn new(settings: LoginSettings) -> Login {
        Login {
            settings,
            http: Http::new(),
            endpoints: Mutex::new(None),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &LoginSettings {
        &self.settings
    }

    /// The endpoints, discovered (again) when needed.
    async fn endpoints(&self) -> Result<Arc<Endpoints>, LoginError> {
        let mut cached = self.endpoints.lock().await;
        if let Some(endpoints) = cached.as_ref()
            && endpoints.fetched.elapsed() < DISCOVERY_TTL
        {
            return Ok(Arc::clone(endpoints));
        }
        let endpoints = Arc::new(self.discover().await?);
        *cached = Some(Arc::clone(&endpoints));
        Ok(endpoints)
    }

    /// Forgets the discovered endpoints and keys (e.g. after an ID token
    /// signed with an unknown key): the next use reads them again.
    async fn forget_endpoints(&self) {
        *self.endpoints.lock().await = None;
    }

    /// The provider's endpoints (discovered for OpenID Connect, as
    /// configured for plain OAuth2), with this client's redirect URL and
    /// secret.
    async fn discover(&self) -> Result<Endpoints, LoginError> {
        let s = &self.settings;
        let redirect =
            RedirectUrl::new(s.redirect_url.clone()).map_err(|e| fail("redirect_url", e))?;
        let mut endpoints = match &s.provider {
            ProviderKind::Oidc { issuer } => self.oidc_endpoints(issuer).await?,
            ProviderKind::OAuth2 {
                auth_url,
                token_url,
                revoke_url,
            } => self.oauth2_endpoints(auth_url, token_url, revoke_url.clone())?,
        };
        endpoints.client = endpoints
            .client
            .clone()
            .set_redirect_uri(redirect)
            .set_auth_type(endpoints.auth_type.clone());
        if let Some(secret) = &s.client_secret {
            endpoints.client = endpoints
                .client
                .clone()
                .set_client_secret(ClientSecret::new(secret.clone()));
        }
        Ok(endpoints)
    }

    /// OpenID Connect discovery at `issuer`.
    async fn oidc_endpoints(&self, issuer: &str) -> Result<Endpoints, LoginError> {
        let issuer_url = IssuerUrl::new(issuer.to_string()).map_err(|e| fail("issuer", e))?;
        let metadata = Discovery::discover_async(issuer_url, &self.http)
            .await
            .map_err(|e| {
                fail(
                    &format!("OpenID Connect discovery at {issuer} failed"),
                    error_chain(&e),
                )
            })?;
        let token = metadata
            .token_endpoint()
            .cloned()
            .ok_or_else(|| LoginError(format!("{issuer}: no token_endpoint")))?;
        let methods = metadata
            .token_endpoint_auth_methods_supported()
            .cloned()
            .unwrap_or_default();
        Ok(Endpoints {
            client: CoreClient::new(
                ClientId::new(self.settings.client_id.clone()),
                metadata.issuer().clone(),
                metadata.jwks().clone(),
            )
            .set_auth_uri(metadata.authorization_endpoint().clone())
            .set_token_uri(token),
            oidc: true,
            algs: metadata
                .id_token_signing_alg_values_supported()
                .iter()
                .filter(|a| !matches!(a, CoreJwsSigningAlgorithm::None))
                .cloned()
                .collect(),
            revocation: metadata.additional_metadata().revocation_endpoint.clone(),
            end_session: metadata.additional_metadata().end_session_endpoint.clone(),
            auth_type: token_auth_type(&methods),
            fetched: Instant::now(),
        })
    }

    /// The reference's plain OAuth2 endpoints, as configured.
    fn oauth2_endpoints(
        &self,
        auth_url: &str,
        token_url: &str,
        revoke_url: Option<String>,
    ) -> Result<Endpoints, LoginError> {
        Ok(Endpoints {
            client: CoreClient::new(
                ClientId::new(self.settings.client_id.clone()),
                IssuerUrl::new(auth_url.to_string()).map_err(|e| fail("auth_url", e))?,
                JsonWebKeySet::default(),
            )
            .set_auth_uri(AuthUrl::new(auth_url.to_string()).map_err(|e| fail("auth_url", e))?)
            .set_token_uri(TokenUrl::new(token_url.to_string()).map_err(|e| fail("token_url", e))?),
            oidc: false,
            algs: Vec::new(),
            revocation: revoke_url,
            end_session: None,
            auth_type: AuthType::BasicAuth,
            fetched: Instant::now(),
        })
    }

    /// Starts a sign-in: the provider's authorization URL (PKCE S256, a
    /// random `state` and `nonce`) and what the callback needs.
    pub async fn authorize(&self, return_to: String) -> Result<(String, PendingLogin), LoginError> {
        let endpoints = self.endpoints().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = endpoints.client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in &self.settings.scopes {
            if scope != "openid" {
                request = request.add_scope(Scope::new(scope.clone()));
            }
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok((
            url.to_string(),
            PendingLogin {
                state: state.secret().clone(),
                nonce: nonce.secret().clone(),
                pkce_verifier: verifier.secret().clone(),
                return_to,
                started_at: Utc::now(),
            },
        ))
    }

    /// Exchanges the code (with the PKCE verifier) and, for OpenID
    /// Connect, verifies the ID token (signature with the provider's keys,
    /// issuer, audience, expiry, nonce, `at_hash`). Returns the tokens and
    /// the user the ID token names (`None` for plain OAuth2).
    pub async fn finish(
        &self,
        code: String,
        login: &PendingLogin,
    ) -> Result<(Tokens, Option<SessionUser>), LoginError> {
        let endpoints = self.endpoints().await?;
        let response: CoreTokenResponse = endpoints
            .client
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(PkceCodeVerifier::new(login.pkce_verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| fail("the code exchange failed", error_chain(&e)))?;
        let tokens = tokens_of(&response, None);
        if !endpoints.oidc {
            return Ok((tokens, None));
        }
        let Some(id_token) = response.id_token() else {
            return Err(LoginError("the provider sent no ID token".into()));
        };
        let mut verifier = endpoints.client.id_token_verifier();
        if !endpoints.algs.is_empty() {
            verifier = verifier.set_allowed_algs(endpoints.algs.clone());
        }
        let claims = match id_token.claims(&verifier, &Nonce::new(login.nonce.clone())) {
            Ok(claims) => claims,
            Err(e) => {
                // Perhaps the keys rotated: read them again next time.
                self.forget_endpoints().await;
                return Err(fail("the ID token was refused", e));
            }
        };
        if let Some(expected) = claims.access_token_hash() {
            let alg = id_token
                .signing_alg()
                .map_err(|e| fail("the ID token was refused", e))?;
            let key = id_token
                .signing_key(&verifier)
                .map_err(|e| fail("the ID token was refused", e))?;
            let actual = AccessTokenHash::from_token(response.access_token(), alg, key)
                .map_err(|e| fail("the ID token was refused", e))?;
            if actual != *expected {
                return Err(LoginError(
                    "the ID token was refused: at_hash does not match the access token".into(),
                ));
            }
        }
        let name = claims
            .name()
            .and_then(|n| n.get(None))
            .map(|n| n.to_string())
            .or_else(|| claims.preferred_username().map(|u| u.to_string()));
        Ok((
            tokens,
            Some(SessionUser {
                subject: claims.subject().to_string(),
                name,
            }),
        ))
    }

    /// The refresh_token grant; the new tokens (keeping the refresh and ID
    /// tokens when the provider sends no new ones).
    pub async fn refresh(&self, tokens: &Tokens) -> Result<Tokens, LoginError> {
        let Some(refresh) = &tokens.refresh_token else {
            return Err(LoginError("no refresh token".into()));
        };
        let endpoints = self.endpoints().await?;
        let refresh = RefreshToken::new(refresh.clone());
        let response: CoreTokenResponse = endpoints
            .client
            .exchange_refresh_token(&refresh)
            .request_async(&self.http)
            .await
            .map_err(|e| fail("the token refresh failed", error_chain(&e)))?;
        Ok(tokens_of(&response, Some(tokens)))
    }

    /// Revokes the refresh and access tokens at the provider's revocation
    /// endpoint (RFC 7009), when it has one. Best effort: failures are
    /// logged (without the tokens) and returned as a count.
    pub async fn revoke(&self, tokens: &Tokens) -> usize {
        let Ok(endpoints) = self.endpoints().await else {
            return 0;
        };
        let Some(url) = endpoints.revocation.clone() else {
            return 0;
        };
        let mut revoked = 0;
        let pairs = [
            (tokens.refresh_token.as_deref(), "refresh_token"),
            (Some(tokens.access_token.as_str()), "access_token"),
        ];
        for (token, hint) in pairs {
            let Some(token) = token else { continue };
            let mut form = vec![("token", token), ("token_type_hint", hint)];
            let mut request = self.http.0.post(&url);
            match (&self.settings.client_secret, &endpoints.auth_type) {
                (Some(secret), AuthType::BasicAuth) => {
                    request = request.basic_auth(
                        form_encode(&self.settings.client_id),
                        Some(form_encode(secret)),
                    );
                }
                (Some(secret), _) => {
                    form.push(("client_id", &self.settings.client_id));
                    form.push(("client_secret", secret));
                }
                (None, _) => form.push(("client_id", &self.settings.client_id)),
            }
            let body = openidconnect::url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish();
            let outcome = request
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await;
            match outcome {
                Ok(r) if r.status().is_success() => revoked += 1,
                Ok(r) => {
                    let status = r.status();
                    let body = r.text().await.unwrap_or_default();
                    if body.contains("unsupported_token_type") {
                        // RFC 7009 §2.2.1: e.g. self-contained JWT access
                        // tokens, which simply expire.
                        tracing::info!(hint, "the provider does not revoke this token type");
                    } else {
                        tracing::warn!(%status, hint, "token revocation refused");
                    }
                }
                Err(e) => tracing::warn!(hint, "token revocation failed: {}", e.without_url()),
            }
        }
        revoked
    }

    /// The provider's RP-initiated logout URL for these tokens, if it has
    /// an `end_session_endpoint`.
    pub async fn end_session_url(&self, tokens: &Tokens) -> Option<String> {
        let endpoints = self.endpoints().await.ok()?;
        let mut url = openidconnect::url::Url::parse(endpoints.end_session.as_deref()?).ok()?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("client_id", &self.settings.client_id);
            if let Some(id_token) = &tokens.id_token {
                query.append_pair("id_token_hint", id_token);
            }
            if let Some(after) = &self.settings.post_logout_redirect_url {
                query.append_pair("post_logout_redirect_uri", after);
            }
        }
        Some(url.to_string())
    }
}

/// Tokens from a token response; `previous` supplies what a refresh
/// response may leave out.
fn tokens_of(response: &CoreTokenResponse, previous: Option<&Tokens>) -> Tokens {
    Tokens {
        access_token: response.access_token().secret().clone(),
        refresh_token: response
            .refresh_token()
            .map(|t| t.secret().clone())
            .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
        id_token: response
            .id_token()
            .map(|t| t.to_string())
            .or_else(|| previous.and_then(|p| p.id_token.clone())),
        expires_at: response
            .expires_in()
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| Utc::now() + d),
    }
}

/// An error with its sources, one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let more = e.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = e.source();
    }
    text
}

/// `application/x-www-form-urlencoded` of one value (HTTP Basic client
/// credentials are form-encoded first, RFC 6749 §2.3.1).
fn form_encode(value: &str) -> String {
    openidconnect::url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// How the client authenticates at the token endpoint: HTTP Basic unless
/// the provider takes only `client_secret_post`.
fn token_auth_type(methods: &[CoreClientAuthMethod]) -> AuthType {
    if !methods.is_empty()
        && !methods.contains(&CoreClientAuthMethod::ClientSecretBasic)
        && methods.contains(&CoreClientAuthMethod::ClientSecretPost)
    {
        AuthType::RequestBody
    } else {
        AuthType::BasicAuth
    }
}
