//! The egress guard: where a request may really go.
//!
//! A request passes the allow-list by its URL's scheme, host and port
//! (exact text: `127.0.0.1.`, `2130706433` or `[::ffff:127.0.0.1]` are not
//! `127.0.0.1`). Then its host is resolved here, once, and every address it
//! resolves to is checked: loopback, private, link-local, unique-local,
//! CGNAT, multicast, reserved and cloud-metadata addresses are refused
//! unless the allow-list entry names that very address. The request is
//! then sent to the address that was checked, so a second DNS answer
//! (rebinding) never decides where it goes. A host name the operator marks
//! internal (`private_hosts`) may resolve to non-public addresses, never to
//! a metadata address. Addresses embedded in IPv6
//! (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are judged as the IPv4
//! address they carry.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;

use http::uri::Scheme;

use super::grant::HttpGrant;
use super::origin::AllowedHost;

/// Cloud metadata services: AWS, GCP, Azure (169.254.169.254), AWS ECS
/// (169.254.170.2), Alibaba (100.100.100.200), Oracle (192.0.0.192), AWS
/// over IPv6 (fd00:ec2::254).
const METADATA: [IpAddr; 5] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V4(Ipv4Addr::new(192, 0, 0, 192)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
];

/// Why `ip` is not a public address, or `None` if it is one.
pub(crate) fn special(ip: IpAddr) -> Option<&'static str> {
    if METADATA.contains(&ip) {
        return Some("a cloud metadata address");
    }
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => special(IpAddr::V4(v4)),
            None => special_v6(v6),
        },
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_private() => "a private address",
        _ if ip.is_link_local() => "a link-local address",
        _ if ip.is_multicast() => "a multicast address",
        _ if ip.is_broadcast() => "the broadcast address",
        (0, _, _) => "an address of this network (0.0.0.0/8)",
        (100, 64..=127, _) => "a carrier-grade NAT address (100.64.0.0/10)",
        (192, 0, 0) => "an IETF protocol address (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address (198.18.0.0/15)",
        (240..=255, _, _) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    Some(match first {
        _ if ip.is_unspecified() => "the unspecified address",
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_multicast() => "a multicast address",
        0xfc00..=0xfdff => "a unique-local address (fc00::/7)",
        0xfe80..=0xfebf => "a link-local address (fe80::/10)",
        0xfec0..=0xfeff => "a site-local address (fec0::/10)",
        0x2001 if ip.segments()[1] == 0x0db8 => "a documentation address (2001:db8::/32)",
        // Teredo hides an IPv4 address (obfuscated) behind a relay.
        0x2001 if ip.segments()[1] == 0 => "a Teredo address (2001::/32)",
        0x0100 if ip.segments()[1..4] == [0, 0, 0] => "a discard-only address (100::/64)",
        _ => return None,
    })
}

/// The IPv4 address an IPv6 address carries, in the forms that reach it:
/// IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail),
        [0, 0, 0, 0, 0, 0, _, _] if !ip.is_loopback() && !ip.is_unspecified() => Some(tail),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

/// Resolves host names; the system's resolver, or one a test controls.
pub trait Resolve: Send + Sync + std::fmt::Debug {
    /// The addresses of `host`, with `port`.
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>>;
}

/// The system's resolver (`getaddrinfo`, on tokio's blocking pool).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// Why the guard refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not in the allow-list (or not an absolute http(s) URL).
    NotAllowed,
    /// The host does not resolve.
    Unresolved(String),
    /// It resolves to an address that is not public and not allowed by
    /// address.
    Prohibited { address: IpAddr, why: &'static str },
}

impl Refusal {
    /// As the WASI error the guest sees.
    pub(crate) fn to_wasi(&self) -> wasmtime_wasi_http::Error {
        use wasmtime_wasi_http::Error;
        match self {
            Refusal::NotAllowed => Error::HttpRequestDenied,
            Refusal::Unresolved(_) => Error::DnsError { rcode: Some("NXDOMAIN".into()), info_code: None },
            Refusal::Prohibited { .. } => Error::DestinationIpProhibited,
        }
    }
}

/// Where a request for `uri` may be sent: the addresses it resolved to,
/// every one checked (see the module documentation), to be tried in order.
pub(crate) async fn destination(
    grant: &HttpGrant,
    uri: &http::Uri,
    resolver: &dyn Resolve,
) -> Result<Vec<SocketAddr>, Refusal> {
    let entry = grant.entry_for(uri).ok_or(Refusal::NotAllowed)?;
    checked(grant, entry, uri, resolver).await
}

/// Where the host's own OAuth2 token request for `uri` may be sent: as
/// [`destination`], with the origin of the token URL the operator wrote
/// (`operator`, if any) allowed as well. The addresses are checked alike.
pub(crate) async fn token_destination(
    grant: &HttpGrant,
    operator: Option<&AllowedHost>,
    uri: &http::Uri,
    resolver: &dyn Resolve,
) -> Result<Vec<SocketAddr>, Refusal> {
    let entry = grant.entry_for(uri).or(operator.filter(|o| o.matches(uri))).ok_or(Refusal::NotAllowed)?;
    checked(grant, entry, uri, resolver).await
}

/// The addresses of `uri`, allowed by `entry`, every one checked.
async fn checked(
    grant: &HttpGrant,
    entry: &AllowedHost,
    uri: &http::Uri,
    resolver: &dyn Resolve,
) -> Result<Vec<SocketAddr>, Refusal> {
    let https = uri.scheme() == Some(&Scheme::HTTPS);
    let authority = uri.authority().ok_or(Refusal::NotAllowed)?;
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    let addresses = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => resolver.resolve(host, port).await.map_err(|e| Refusal::Unresolved(e.to_string()))?,
    };
    if addresses.is_empty() {
        return Err(Refusal::Unresolved("no addresses".into()));
    }
    // Every address must pass: one bad answer among good ones is what a
    // rebinding attack looks like.
    let named = entry.address().map(|a| a.to_canonical());
    let internal = grant.is_internal(host);
    for address in &addresses {
        let ip = address.ip().to_canonical();
        if let Some(why) = special(ip)
            && named != Some(ip)
            && (!internal || METADATA.contains(&ip))
        {
            return Err(Refusal::Prohibited { address: ip, why });
        }
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A resolver whose answers the test writes.
    #[derive(Debug, Default)]
    struct Answers(HashMap<&'static str, Vec<IpAddr>>);

    impl Resolve for Answers {
        fn resolve<'a>(
            &'a self,
            host: &'a str,
            port: u16,
        ) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send + 'a>> {
            let found = self.0.get(host).map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
            Box::pin(async move { found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host")) })
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn special_addresses_in_every_spelling_are_named() {
        for (address, why) in [
            ("127.0.0.1", "loopback"),
            ("127.0.0.2", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "metadata"),
            ("169.254.170.2", "metadata"),
            ("169.254.1.1", "link-local"),
            ("100.64.0.1", "carrier-grade"),
            ("100.100.100.200", "metadata"),
            ("192.0.0.192", "metadata"),
            ("0.0.0.0", "this network"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fd00:ec2::254", "metadata"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.2", "loopback"),
            ("::ffff:169.254.169.254", "metadata"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.2", "loopback"),
            ("64:ff9b::a9fe:a9fe", "metadata"),
            ("2002:a00:1::", "private"),
            ("2001::1", "Teredo"),
        ] {
            let found = special(ip(address)).unwrap_or_else(|| panic!("{address} passed as public"));
            assert!(found.contains(why), "{address}: {found}");
        }
        for public in ["93.184.215.14", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "172.32.0.1", "100.128.0.1"] {
            assert_eq!(special(ip(public)), None, "{public}");
        }
    }

    fn grant(entries: &[&str]) -> HttpGrant {
        HttpGrant::parse(&entries.iter().map(|e| (*e).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    async fn check(grant: &HttpGrant, url: &str, resolver: &Answers) -> Result<SocketAddr, Refusal> {
        destination(grant, &url.parse().unwrap(), resolver).await.map(|addresses| addresses[0])
    }

    #[tokio::test]
    async fn names_are_resolved_once_and_every_answer_checked() {
        let resolver = Answers(HashMap::from([
            ("api.example.com", vec![ip("93.184.215.14")]),
            ("metadata.example.com", vec![ip("169.254.169.254")]),
            ("intranet.example.com", vec![ip("10.0.0.7")]),
            ("mixed.example.com", vec![ip("93.184.215.14"), ip("192.168.0.1")]),
            ("v6.example.com", vec![ip("fd00:ec2::254")]),
            ("mapped.example.com", vec![ip("::ffff:127.0.0.1")]),
        ]));
        let all = grant(&[
            "https://api.example.com",
            "https://metadata.example.com",
            "https://intranet.example.com",
            "https://mixed.example.com",
            "https://v6.example.com",
            "https://mapped.example.com",
            "https://gone.example.com",
        ]);
        let ok = check(&all, "https://api.example.com/v1", &resolver).await.unwrap();
        assert_eq!(ok, "93.184.215.14:443".parse().unwrap());
        for (url, address) in [
            ("https://metadata.example.com/latest/meta-data", "169.254.169.254"),
            ("https://intranet.example.com/", "10.0.0.7"),
            ("https://mixed.example.com/", "192.168.0.1"),
            ("https://v6.example.com/", "fd00:ec2::254"),
            ("https://mapped.example.com/", "127.0.0.1"),
        ] {
            match check(&all, url, &resolver).await {
                Err(Refusal::Prohibited { address: found, .. }) => assert_eq!(found, ip(address), "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        assert!(matches!(check(&all, "https://gone.example.com/", &resolver).await, Err(Refusal::Unresolved(_))));
        assert_eq!(check(&all, "https://elsewhere.example.com/", &resolver).await, Err(Refusal::NotAllowed));
    }

    #[tokio::test]
    async fn token_requests_pass_the_same_guard_with_the_operators_token_url_allowed() {
        let api = grant(&["https://api.example.com"]);
        let resolver = Answers(HashMap::from([
            ("api.example.com", vec![ip("93.184.215.14")]),
            ("login.example.com", vec![ip("93.184.215.15")]),
            ("rebound.example.com", vec![ip("169.254.169.254")]),
        ]));
        let token = |url: &str, operator: Option<&str>| {
            let operator = operator.map(|o| AllowedHost::origin_of(o).unwrap());
            let (api, resolver) = (&api, &resolver);
            let uri: http::Uri = url.parse().unwrap();
            async move { token_destination(api, operator.as_ref(), &uri, resolver).await }
        };
        // The API's own origin is allowed; another one only when the
        // operator wrote it (a document's token URL is not).
        assert!(token("https://api.example.com/oauth/token", None).await.is_ok());
        assert_eq!(token("https://login.example.com/token", None).await, Err(Refusal::NotAllowed));
        assert_eq!(token("http://127.0.0.2:8080/token", None).await, Err(Refusal::NotAllowed));
        let login = Some("https://login.example.com/token");
        assert!(token("https://login.example.com/token", login).await.is_ok());
        assert_eq!(token("https://login.example.com:8443/token", login).await, Err(Refusal::NotAllowed));
        // The operator's origin passes the allow-list, not the address checks.
        let rebound = Some("https://rebound.example.com/token");
        assert!(matches!(
            token("https://rebound.example.com/token", rebound).await,
            Err(Refusal::Prohibited { why: "a cloud metadata address", .. })
        ));
        let by_address = Some("http://127.0.0.2:8080/token");
        assert!(token("http://127.0.0.2:8080/token", by_address).await.is_ok());
    }

    #[tokio::test]
    async fn a_special_address_passes_only_when_named_exactly() {
        let resolver = Answers::default();
        let local = grant(&["http://127.0.0.1:8080", "http://[::1]:8080", "http://169.254.169.254"]);
        assert_eq!(
            check(&local, "http://127.0.0.1:8080/x", &resolver).await.unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert!(check(&local, "http://[::1]:8080/x", &resolver).await.is_ok());
        assert!(check(&local, "http://169.254.169.254/", &resolver).await.is_ok());
        // Other spellings of an allowed address, and its neighbours, are
        // not in the allow-list.
        for url in [
            "http://127.0.0.2:8080/",
            "http://2130706433:8080/",
            "http://0x7f000001:8080/",
            "http://0177.0.0.1:8080/",
            "http://127.1:8080/",
            "http://127.0.0.1.:8080/",
            "http://[::ffff:127.0.0.1]:8080/",
            "http://[::ffff:7f00:2]:8080/",
            "http://127.0.0.1:8080@127.0.0.2:8080/",
            "http://user:secret@127.0.0.1:8080/",
            "http://127.0.0.1:08080/",
            "http://localhost:8080/",
        ] {
            assert_eq!(check(&local, url, &resolver).await, Err(Refusal::NotAllowed), "{url}");
        }
        // A name marked internal may resolve to a private address, never
        // to a metadata one.
        let mut internal = grant(&["https://intranet.example.com", "https://metadata.example.com"]);
        internal.set_internal(vec!["intranet.example.com".into(), "metadata.example.com".into()]);
        let resolver = Answers(HashMap::from([
            ("intranet.example.com", vec![ip("10.0.0.7")]),
            ("metadata.example.com", vec![ip("169.254.169.254")]),
        ]));
        assert_eq!(
            check(&internal, "https://intranet.example.com/", &resolver).await.unwrap(),
            "10.0.0.7:443".parse().unwrap()
        );
        assert!(matches!(
            check(&internal, "https://metadata.example.com/", &resolver).await,
            Err(Refusal::Prohibited { why: "a cloud metadata address", .. })
        ));
        // Allowing a name does not allow what it resolves to.
        let by_name = grant(&["http://localhost:8080"]);
        let resolver = Answers(HashMap::from([("localhost", vec![ip("127.0.0.1")])]));
        assert!(matches!(
            check(&by_name, "http://localhost:8080/", &resolver).await,
            Err(Refusal::Prohibited { why: "a loopback address", .. })
        ));
    }
}
