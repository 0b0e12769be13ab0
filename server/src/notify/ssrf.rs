//! Outbound URLs chosen by callers (A2A push callbacks) are checked
//! before every use: http or https only, no credentials in the URL, and
//! every address the host resolves to must be public — loopback,
//! private, link-local, unspecified, broadcast, benchmarking
//! (198.18/15) and multicast addresses are refused unless `a2a_push`
//! allows them. IPv6 addresses that carry an IPv4 address (v4-mapped
//! `::ffff:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`,
//! IPv4-compatible `::a.b.c.d`) are judged by that IPv4 address too; the
//! local-use NAT64 prefix `64:ff9b:1::/48` counts as private, and an
//! IPv4-compatible address is refused even when its IPv4 address is
//! public (deprecated, never a real destination). The check runs when a
//! config is set and again before each send (DNS rebinding), and the
//! send connects to exactly the addresses checked ([`Target::client`]),
//! with redirects off and no proxy.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;

use crate::config::notify::A2aPushConfig;

/// How long a name lookup may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an address is not public, and whether `allow_private_networks`
/// lifts the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// What the address is ("loopback", "link-local", ...).
    pub kind: &'static str,
    /// `allow_private_networks` accepts it.
    pub private: bool,
}

const fn refused(kind: &'static str, private: bool) -> Option<Refusal> {
    Some(Refusal { kind, private })
}

/// Why `ip` is not a public address, or `None` when it is. An IPv6
/// address that carries an IPv4 address (v4-mapped, NAT64, 6to4,
/// IPv4-compatible) is judged by that IPv4 address too.
pub fn classify(ip: IpAddr) -> Option<Refusal> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Refusal> {
    let [a, b, ..] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        refused("unspecified", false)
    } else if ip.is_loopback() {
        refused("loopback", true)
    } else if ip.is_link_local() {
        refused("link-local", false)
    } else if ip.is_private() {
        refused("private", true)
    } else if a == 100 && (64..128).contains(&b) {
        refused("shared (carrier-grade NAT)", true)
    } else if a == 198 && (b == 18 || b == 19) {
        refused("benchmarking", false)
    } else if ip.is_broadcast() {
        refused("broadcast", false)
    } else if ip.is_multicast() || a >= 240 {
        refused("multicast or reserved", false)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Refusal> {
    let first = ip.segments()[0];
    if let Some(v4) = ip.to_ipv4_mapped() {
        classify_v4(v4)
    } else if let Some(v4) = translated_v4(ip) {
        classify_v4(v4)
    } else if ip.segments()[..3] == [0x64, 0xff9b, 1] {
        refused("local-use NAT64", true)
    } else if let Some(v4) = compatible_v4(ip) {
        classify_v4(v4).or(refused("IPv4-compatible (deprecated)", false))
    } else if ip.is_unspecified() {
        refused("unspecified", false)
    } else if ip.is_loopback() {
        refused("loopback", true)
    } else if ip.is_multicast() {
        refused("multicast", false)
    } else if first & 0xffc0 == 0xfe80 {
        refused("link-local", false)
    } else if first & 0xfe00 == 0xfc00 {
        refused("unique-local (private)", true)
    } else {
        None
    }
}

/// The IPv4 address a translating prefix carries, where a packet to `ip`
/// really goes: NAT64 `64:ff9b::/96` (the last 32 bits) and 6to4
/// `2002::/16` (bits 16 to 48).
fn translated_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let (s, o) = (ip.segments(), ip.octets());
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]))
    } else if s[0] == 0x2002 {
        Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]))
    } else {
        None
    }
}

/// The IPv4 address of an IPv4-compatible address `::a.b.c.d`
/// (deprecated), not `::` or `::1`.
fn compatible_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let [.., a, b, c, d] = ip.octets();
    let v4 = Ipv4Addr::new(a, b, c, d);
    (ip.segments()[..6] == [0; 6] && u32::from(v4) > 1).then_some(v4)
}

/// A checked URL and the addresses a send may connect to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL.
    pub url: Url,
    host: String,
    addrs: Vec<SocketAddr>,
}

impl Target {
    /// A client that connects only to the checked addresses, follows no
    /// redirect and uses no proxy.
    pub fn client(&self, timeout: Duration) -> reqwest::Result<reqwest::Client> {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .resolve_to_addrs(&self.host, &self.addrs)
            .build()
    }
}

/// Where callback host names are looked up.
#[derive(Clone, Default)]
pub enum Resolver {
    /// The system's resolver.
    #[default]
    System,
    /// A fixed table, for tests: a name's addresses, none when it does
    /// not resolve.
    Table(Arc<Lookup>),
}

/// A name's addresses (none: it does not resolve).
pub type Lookup = dyn Fn(&str) -> Vec<IpAddr> + Send + Sync;

/// The rules (`a2a_push`) and the resolver a check uses.
#[derive(Clone, Default)]
pub struct Policy {
    /// Which addresses are accepted.
    pub rules: A2aPushConfig,
    /// How names become addresses.
    pub resolver: Resolver,
}

impl From<A2aPushConfig> for Policy {
    fn from(rules: A2aPushConfig) -> Policy {
        Policy {
            rules,
            resolver: Resolver::System,
        }
    }
}

/// Why a URL cannot be used now; the text is meant for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// Never usable as it is: not http(s), credentials in it, or an
    /// address inside.
    #[error("{0}")]
    Refused(String),
    /// The host does not resolve now; it may later.
    #[error("{0}")]
    Unresolved(String),
}

/// Parses `raw` and checks it against `policy` (see the module docs):
/// before each delivery, where everything must pass.
pub async fn check(raw: &str, policy: &Policy) -> Result<Target, Problem> {
    let (url, host, port) = parse(raw).map_err(Problem::Refused)?;
    let addrs = resolve(&host, port, &policy.resolver)
        .await
        .map_err(Problem::Unresolved)?;
    admit(&host, &addrs, &policy.rules).map_err(Problem::Refused)?;
    Ok(Target { url, host, addrs })
}

/// The check when a callback is registered: like [`check`], except that a
/// host that does not resolve now is accepted, with the warning returned
/// (`Ok(Some(..))`, no query string in it), because [`check`] runs again,
/// resolution included, before every delivery.
pub async fn check_registration(raw: &str, policy: &Policy) -> Result<Option<String>, String> {
    match check(raw, policy).await {
        Ok(_) => Ok(None),
        Err(Problem::Unresolved(why)) => Ok(Some(why)),
        Err(Problem::Refused(why)) => Err(why),
    }
}

/// Why the host of an operator's URL (a webhook: trusted, not held to
/// the address rules) does not resolve now, or `None` when it does; for
/// a warning at startup, since each delivery resolves it again.
pub async fn unresolved(raw: &str, resolver: &Resolver) -> Option<String> {
    match parse(raw) {
        Ok((_, host, port)) => resolve(&host, port, resolver).await.err(),
        Err(why) => Some(why),
    }
}

/// The URL, its host and port, when it is one we may call at all.
fn parse(raw: &str) -> Result<(Url, String, u16), String> {
    let url = Url::parse(raw).map_err(|e| format!("url {raw:?} is not a valid URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "url scheme {:?} is not accepted; use http or https",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("url must not carry credentials; use authentication instead".into());
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("url {raw:?} has no host"))?
        .to_string();
    let port = url
        .port_or_known_default()
        .ok_or_else(|| format!("url {raw:?} has no port"))?;
    Ok((url, host, port))
}

/// Every address must be public, unless the host is listed or
/// `allow_private_networks` lifts that address's refusal.
fn admit(host: &str, addrs: &[SocketAddr], rules: &A2aPushConfig) -> Result<(), String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if rules
        .allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(bare))
    {
        return Ok(());
    }
    for addr in addrs {
        if let Some(refusal) = classify(addr.ip())
            && !(refusal.private && rules.allow_private_networks)
        {
            return Err(format!(
                "callback host {bare} resolves to {}, a {} address; refused \
                 (a2a_push.allow_private_networks or a2a_push.allowed_hosts allow it)",
                addr.ip(),
                refusal.kind
            ));
        }
    }
    Ok(())
}

/// Every address of the URL's host (an IP literal is its own).
async fn resolve(host: &str, port: u16, resolver: &Resolver) -> Result<Vec<SocketAddr>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addrs: Vec<SocketAddr> = match resolver {
        Resolver::Table(table) => table(host)
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect(),
        Resolver::System => {
            tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((host, port)))
                .await
                .map_err(|_| format!("cannot resolve callback host {host}: timed out"))?
                .map_err(|e| format!("cannot resolve callback host {host}: {e}"))?
                .collect()
        }
    };
    if addrs.is_empty() {
        return Err(format!("callback host {host} has no address"));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_classified() {
        let table: &[(&str, Option<(&str, bool)>)] = &[
            ("8.8.8.8", None),
            ("93.184.216.34", None),
            ("2606:4700::1111", None),
            ("127.0.0.1", Some(("loopback", true))),
            ("127.255.0.9", Some(("loopback", true))),
            ("::1", Some(("loopback", true))),
            ("::ffff:127.0.0.1", Some(("loopback", true))),
            ("10.1.2.3", Some(("private", true))),
            ("172.16.0.1", Some(("private", true))),
            ("172.31.255.255", Some(("private", true))),
            ("192.168.1.1", Some(("private", true))),
            ("::ffff:192.168.1.1", Some(("private", true))),
            ("100.64.0.1", Some(("shared (carrier-grade NAT)", true))),
            ("fc00::1", Some(("unique-local (private)", true))),
            ("fd12:3456::1", Some(("unique-local (private)", true))),
            ("169.254.169.254", Some(("link-local", false))),
            ("fe80::1", Some(("link-local", false))),
            ("0.0.0.0", Some(("unspecified", false))),
            ("0.1.2.3", Some(("unspecified", false))),
            ("::", Some(("unspecified", false))),
            ("255.255.255.255", Some(("broadcast", false))),
            ("224.0.0.1", Some(("multicast or reserved", false))),
            ("ff02::1", Some(("multicast", false))),
        ];
        for (ip, expected) in table {
            let got = classify(ip.parse().unwrap()).map(|r| (r.kind, r.private));
            assert_eq!(got, *expected, "{ip}");
        }
        // Not private: 172.32/12 and 11/8 are public.
        assert_eq!(classify("172.32.0.1".parse().unwrap()), None);
        assert_eq!(classify("11.0.0.1".parse().unwrap()), None);
    }

    fn kind_of(ip: &str) -> Option<(&'static str, bool)> {
        classify(ip.parse().unwrap()).map(|r| (r.kind, r.private))
    }

    #[test]
    fn benchmarking_addresses_are_refused() {
        for ip in ["198.18.0.1", "198.19.255.254", "::ffff:198.18.0.1"] {
            assert_eq!(kind_of(ip), Some(("benchmarking", false)), "{ip}");
        }
        assert_eq!(kind_of("198.17.255.255"), None);
        assert_eq!(kind_of("198.20.0.1"), None);
    }

    #[test]
    fn nat64_addresses_are_judged_by_the_ipv4_address_they_carry() {
        assert_eq!(kind_of("64:ff9b::7f00:1"), Some(("loopback", true)));
        assert_eq!(kind_of("64:ff9b::10.1.2.3"), Some(("private", true)));
        assert_eq!(
            kind_of("64:ff9b::169.254.169.254"),
            Some(("link-local", false))
        );
        assert_eq!(
            kind_of("64:ff9b::198.18.0.1"),
            Some(("benchmarking", false))
        );
        // DNS64 gives IPv4-only public hosts such addresses: accepted.
        assert_eq!(kind_of("64:ff9b::8.8.8.8"), None);
        // The local-use prefix (RFC 8215) translates into a private network.
        assert_eq!(kind_of("64:ff9b:1::a00:1"), Some(("local-use NAT64", true)));
    }

    #[test]
    fn six_to_four_addresses_are_judged_by_the_ipv4_address_they_carry() {
        assert_eq!(kind_of("2002:7f00:1::1"), Some(("loopback", true)));
        assert_eq!(kind_of("2002:a9fe:a9fe::"), Some(("link-local", false)));
        assert_eq!(kind_of("2002:c0a8:101::5"), Some(("private", true)));
        assert_eq!(kind_of("2002:0:1::"), Some(("unspecified", false)));
        assert_eq!(kind_of("2002:808:808::1"), None);
    }

    #[test]
    fn ipv4_compatible_addresses_are_refused() {
        assert_eq!(kind_of("::127.0.0.1"), Some(("loopback", true)));
        assert_eq!(kind_of("::10.0.0.1"), Some(("private", true)));
        assert_eq!(kind_of("::169.254.169.254"), Some(("link-local", false)));
        // Deprecated (RFC 4291) and never a real destination.
        assert_eq!(
            kind_of("::8.8.8.8"),
            Some(("IPv4-compatible (deprecated)", false))
        );
        assert_eq!(kind_of("::1"), Some(("loopback", true)));
        assert_eq!(kind_of("::"), Some(("unspecified", false)));
    }

    #[tokio::test]
    async fn at_registration_only_a_name_that_does_not_resolve_is_let_through() {
        let nowhere = Policy {
            rules: A2aPushConfig::default(),
            resolver: Resolver::Table(Arc::new(|_: &str| Vec::new())),
        };
        let warning = check_registration("https://later.example/cb?t=1", &nowhere).await;
        let warning = warning.unwrap().expect("a warning");
        assert!(
            warning.contains("later.example") && !warning.contains("t=1"),
            "{warning}"
        );
        // Everything else is refused at once, as before.
        for (url, why) in [
            ("http://127.0.0.1:9/cb", "loopback"),
            ("http://[64:ff9b::a9fe:a9fe]/", "link-local"),
            ("ftp://later.example/", "scheme"),
            ("http://u:p@later.example/", "credentials"),
        ] {
            let refused = check_registration(url, &nowhere).await.unwrap_err();
            assert!(refused.contains(why), "{url}: {refused}");
        }
        let public = Policy::from(A2aPushConfig::default());
        assert_eq!(
            check_registration("https://8.8.8.8/cb", &public).await,
            Ok(None)
        );
    }

    #[tokio::test]
    async fn a_webhook_host_that_does_not_resolve_is_named_without_the_query() {
        let table = Resolver::Table(Arc::new(|host: &str| match host {
            "hooks.example" => vec![IpAddr::from([10, 0, 0, 7])],
            _ => Vec::new(),
        }));
        // Operator URLs: an address inside is fine, only resolution counts.
        assert_eq!(
            unresolved("https://hooks.example/x?k=1", &table).await,
            None
        );
        assert_eq!(unresolved("http://127.0.0.1:9/x", &table).await, None);
        let why = unresolved("https://later.example/x?k=secret", &table).await;
        let why = why.expect("a reason");
        assert!(
            why.contains("later.example") && !why.contains("secret"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn urls_are_checked_before_use() {
        let strict = Policy::default();
        let refused = |r: Result<Target, Problem>| r.unwrap_err().to_string();
        assert!(refused(check("ftp://8.8.8.8/x", &strict).await).contains("scheme"));
        assert!(refused(check("not a url", &strict).await).contains("not a valid URL"));
        assert!(refused(check("http://u:p@8.8.8.8/", &strict).await).contains("credentials"));
        let loopback = refused(check("http://127.0.0.1:9/cb", &strict).await);
        assert!(loopback.contains("loopback"), "{loopback}");
        assert!(refused(check("http://[::1]:9/", &strict).await).contains("loopback"));
        assert!(refused(check("http://localhost:9/", &strict).await).contains("loopback"));
        assert!(refused(check("http://169.254.169.254/", &strict).await).contains("link-local"));
        assert!(check("https://8.8.8.8/cb", &strict).await.is_ok());
        let private = Policy::from(A2aPushConfig {
            allow_private_networks: true,
            ..A2aPushConfig::default()
        });
        assert!(check("http://127.0.0.1:9/cb", &private).await.is_ok());
        assert!(check("http://10.0.0.1/cb", &private).await.is_ok());
        assert!(refused(check("http://169.254.169.254/", &private).await).contains("link-local"));
        let listed = Policy::from(A2aPushConfig {
            allowed_hosts: vec!["169.254.169.254".into(), "LOCALHOST".into()],
            ..A2aPushConfig::default()
        });
        assert!(check("http://169.254.169.254/", &listed).await.is_ok());
        assert!(check("http://localhost:9/", &listed).await.is_ok());
    }
}
