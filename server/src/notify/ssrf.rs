//! Outbound URLs chosen by callers (A2A push callbacks) are checked
//! before every use: http or https only, no credentials in the URL, and
//! every address the host resolves to must be public — loopback,
//! private, link-local, unspecified, broadcast and multicast addresses
//! are refused unless `a2a_push` allows them. The check runs when a
//! config is set and again before each send (DNS rebinding), and the
//! send connects to exactly the addresses checked ([`Target::client`]),
//! with redirects off and no proxy.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::Url;

use super::config::A2aPushConfig;

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

/// Why `ip` is not a public address, or `None` when it is.
pub fn classify(ip: IpAddr) -> Option<Refusal> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
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
    if ip.is_unspecified() {
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

/// Parses `raw` and checks it against `policy` (see the module docs);
/// the reason on refusal, meant for the caller.
pub async fn check(raw: &str, policy: &A2aPushConfig) -> Result<Target, String> {
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
    let addrs = resolve(&host, port).await?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let listed = policy
        .allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(bare));
    if !listed {
        for addr in &addrs {
            if let Some(refusal) = classify(addr.ip())
                && !(refusal.private && policy.allow_private_networks)
            {
                return Err(format!(
                    "callback host {bare} resolves to {}, a {} address; refused \
                     (a2a_push.allow_private_networks or a2a_push.allowed_hosts allow it)",
                    addr.ip(),
                    refusal.kind
                ));
            }
        }
    }
    Ok(Target { url, host, addrs })
}

/// Every address of the URL's host (an IP literal is its own).
async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let lookup = tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| format!("cannot resolve callback host {host}: timed out"))?
        .map_err(|e| format!("cannot resolve callback host {host}: {e}"))?;
    let addrs: Vec<SocketAddr> = lookup.collect();
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

    #[tokio::test]
    async fn urls_are_checked_before_use() {
        let strict = A2aPushConfig::default();
        let refused = |r: Result<Target, String>| r.unwrap_err();
        assert!(refused(check("ftp://8.8.8.8/x", &strict).await).contains("scheme"));
        assert!(refused(check("not a url", &strict).await).contains("not a valid URL"));
        assert!(refused(check("http://u:p@8.8.8.8/", &strict).await).contains("credentials"));
        let loopback = refused(check("http://127.0.0.1:9/cb", &strict).await);
        assert!(loopback.contains("loopback"), "{loopback}");
        assert!(refused(check("http://[::1]:9/", &strict).await).contains("loopback"));
        assert!(refused(check("http://localhost:9/", &strict).await).contains("loopback"));
        assert!(refused(check("http://169.254.169.254/", &strict).await).contains("link-local"));
        assert!(check("https://8.8.8.8/cb", &strict).await.is_ok());
        let private = A2aPushConfig {
            allow_private_networks: true,
            ..A2aPushConfig::default()
        };
        assert!(check("http://127.0.0.1:9/cb", &private).await.is_ok());
        assert!(check("http://10.0.0.1/cb", &private).await.is_ok());
        assert!(refused(check("http://169.254.169.254/", &private).await).contains("link-local"));
        let listed = A2aPushConfig {
            allowed_hosts: vec!["169.254.169.254".into(), "LOCALHOST".into()],
            ..A2aPushConfig::default()
        };
        assert!(check("http://169.254.169.254/", &listed).await.is_ok());
        assert!(check("http://localhost:9/", &listed).await.is_ok());
    }
}
