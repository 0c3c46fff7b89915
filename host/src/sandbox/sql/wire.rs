//! The PostgreSQL wire, bounded: no message from the server larger than the
//! database's result cap (plus a margin for the protocol) is ever read into
//! the host's memory.
//!
//! tokio-postgres reads each protocol message whole before a row reaches
//! the host's byte cap, so one value (`repeat('x', 900000000)`, a huge
//! `string_agg`) could take up to the server's 1 GB field limit of memory,
//! once per pooled connection. Here every connection's stream counts the
//! message lengths it passes (the 5-byte header of every backend message:
//! type and length) and fails with an error naming the cap as soon as a
//! header announces more; the connection is then dropped. Over TLS the
//! count is taken above the encryption.
//!
//! Connections are opened here (the configured hosts in order, each with
//! the connect timeout) and handed to tokio-postgres's `connect_raw`; the
//! same stream serves cancel requests.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_util::future::BoxFuture;
use std::net::IpAddr;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use tokio_postgres::config::{Host, SslMode, SslNegotiation, TargetSessionAttrs};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What a message may hold besides one row's values: the protocol's own
/// bytes, column counts and lengths.
pub(crate) const MARGIN: usize = 64 * 1024;

/// The words of the error a message over the cap fails with.
pub(crate) const OVER_CAP: &str = "over the result cap";

/// Opens a database's connections: sockets to the configured hosts, TLS
/// when the `sslmode` asks, every stream bounded.
#[derive(Clone)]
pub(crate) struct Wire {
    tls: MakeRustlsConnect,
    /// Largest message read, in bytes.
    limit: usize,
    /// Messages refused so far: a statement whose connection closed while
    /// this grew was refused for its size (tokio-postgres reports only that
    /// the connection closed).
    overflows: Arc<AtomicU64>,
}

type Bounded = Capped<Lazy>;
type Client = tokio_postgres::Client;

impl Wire {
    pub(crate) fn new(tls: MakeRustlsConnect, max_result_bytes: usize) -> Wire {
        Wire { tls, limit: max_result_bytes.saturating_add(MARGIN), overflows: Arc::default() }
    }

    /// Messages refused for their size so far.
    pub(crate) fn overflows(&self) -> u64 {
        self.overflows.load(Ordering::Relaxed)
    }

    /// The error a refused message gives a statement.
    pub(crate) fn refusal(&self) -> String {
        format!(
            "the server sent a value {OVER_CAP} of {} KiB, and the connection was closed",
            self.limit.saturating_sub(MARGIN) / 1024
        )
    }

    fn stream(&self, config: &tokio_postgres::Config, target: Target) -> Bounded {
        let negotiated =
            config.get_ssl_mode() != SslMode::Disable && config.get_ssl_negotiation() == SslNegotiation::Postgres;
        // The answer to the TLS request is one byte, not a message.
        Capped::new(Lazy::new(config, target), self.limit, usize::from(negotiated), self.overflows.clone())
    }

    fn tls(&self, target: &Target) -> Tls {
        Tls { make: self.tls.clone(), host: target.name.clone() }
    }

    /// Ask the server to cancel what `token`'s session runs (sent to the
    /// first configured host that answers), within the connect timeout.
    pub(crate) async fn cancel(&self, config: &tokio_postgres::Config, token: tokio_postgres::CancelToken) {
        let timeout = config.get_connect_timeout().copied().unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        for target in targets(config) {
            let sent = token.cancel_query_raw(self.stream(config, target.clone()), self.tls(&target));
            if let Ok(Ok(())) = tokio::time::timeout(timeout, sent).await {
                return;
            }
        }
    }
}

/// Longest wait to connect when the URL gives no `connect_timeout`.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// One place a connection may be made: a host (its name for TLS) and
/// port, or a Unix socket folder.
#[derive(Debug, Clone)]
struct Target {
    /// The host name (what TLS checks), or the address when only one is given.
    name: String,
    kind: TargetKind,
    port: u16,
}

#[derive(Debug, Clone)]
enum TargetKind {
    /// A name to resolve, or an address (`hostaddr`).
    Tcp(Option<IpAddr>),
    Unix(std::path::PathBuf),
}

/// The configured places to connect to, in order (as libpq reads `host`,
/// `hostaddr` and `port`).
fn targets(config: &tokio_postgres::Config) -> Vec<Target> {
    let (hosts, addresses, ports) = (config.get_hosts(), config.get_hostaddrs(), config.get_ports());
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    if hosts.is_empty() {
        return addresses
            .iter()
            .enumerate()
            .map(|(i, address)| Target {
                name: address.to_string(),
                kind: TargetKind::Tcp(Some(*address)),
                port: port(i),
            })
            .collect();
    }
    hosts
        .iter()
        .enumerate()
        .map(|(i, host)| match host {
            Host::Tcp(name) => {
                Target { name: name.clone(), kind: TargetKind::Tcp(addresses.get(i).copied()), port: port(i) }
            }
            Host::Unix(dir) => Target { name: String::new(), kind: TargetKind::Unix(dir.clone()), port: port(i) },
        })
        .collect()
}

impl deadpool_postgres::Connect for Wire {
    /// Each configured place in turn (a host whose TCP, TLS, startup or
    /// authentication fails is skipped, as libpq does); with
    /// `target_session_attrs=read-write`, a server in read-only mode too.
    fn connect(
        &self,
        config: &tokio_postgres::Config,
    ) -> BoxFuture<'_, Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>> {
        let config = config.clone();
        Box::pin(async move {
            let mut places = targets(&config);
            if places.is_empty() {
                // No place at all: the connection's own error says so.
                places.push(Target { name: String::new(), kind: TargetKind::Tcp(None), port: 0 });
            }
            let mut failed = None;
            for target in places {
                let tls = self.tls(&target);
                let (client, connection) = match config.connect_raw(self.stream(&config, target), tls).await {
                    Ok(connected) => connected,
                    Err(error) => {
                        failed = Some(error);
                        continue;
                    }
                };
                let task = tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "a PostgreSQL connection ended");
                    }
                });
                if config.get_target_session_attrs() == TargetSessionAttrs::ReadWrite {
                    let writable = "DO $$ BEGIN IF current_setting('transaction_read_only') = 'on' THEN \
                                    RAISE EXCEPTION 'the server is read-only'; END IF; END $$";
                    if let Err(error) = client.batch_execute(writable).await {
                        task.abort();
                        failed = Some(error);
                        continue;
                    }
                }
                return Ok((client, task));
            }
            Err(failed.expect("at least one place was tried"))
        })
    }
}

/// TLS over a bounded socket: the count moves above the encryption.
struct Tls {
    make: MakeRustlsConnect,
    /// The name the server's certificate must carry.
    host: String,
}

type Encrypted = <MakeRustlsConnect as MakeTlsConnect<Bounded>>::Stream;

impl TlsConnect<Bounded> for Tls {
    type Stream = Capped<Encrypted>;
    type Error = io::Error;
    type Future = BoxFuture<'static, io::Result<Capped<Encrypted>>>;

    fn connect(mut self, mut stream: Bounded) -> Self::Future {
        let (limit, overflows) = (stream.limit, stream.overflows.clone());
        stream.framing = false;
        let host = self.host.clone();
        Box::pin(async move {
            let connect = match MakeTlsConnect::<Bounded>::make_tls_connect(&mut self.make, &host) {
                Ok(connect) => connect,
                Err(never) => match never {},
            };
            let encrypted = connect.connect(stream).await?;
            Ok(Capped::new(encrypted, limit, 0, overflows))
        })
    }
}

/// A stream that counts the server's message lengths and refuses one over
/// its limit.
pub(crate) struct Capped<S> {
    inner: S,
    limit: usize,
    /// Whether bytes read are protocol messages (false under TLS: the
    /// stream above counts).
    framing: bool,
    /// Bytes to pass before the next message (the TLS answer).
    skip: usize,
    header: [u8; 5],
    have: usize,
    /// Bytes of the current message's body still to pass.
    body: usize,
    overflows: Arc<AtomicU64>,
}

impl<S> Capped<S> {
    fn new(inner: S, limit: usize, skip: usize, overflows: Arc<AtomicU64>) -> Capped<S> {
        Capped { inner, limit, framing: true, skip, header: [0; 5], have: 0, body: 0, overflows }
    }

    /// Follow the message boundaries through `bytes`.
    fn scan(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let passed = if self.skip > 0 {
                // The server's answer to the TLS request: `S` or `N`, else
                // it is not speaking the protocol this stream counts.
                if !matches!(bytes[0], b'S' | b'N') {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the server did not answer the TLS request",
                    ));
                }
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                n
            } else if self.body > 0 {
                let n = self.body.min(bytes.len());
                self.body -= n;
                n
            } else {
                let n = (5 - self.have).min(bytes.len());
                self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                if self.have == 5 {
                    self.have = 0;
                    let length = u32::from_be_bytes([self.header[1], self.header[2], self.header[3], self.header[4]]);
                    let length = length as usize;
                    if length < 4 {
                        return Err(io::Error::new(io::ErrorKind::InvalidData, "a malformed message from the server"));
                    }
                    if length > self.limit {
                        self.overflows.fetch_add(1, Ordering::Relaxed);
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "the server sent a value of {length} bytes, {OVER_CAP} of {} KiB",
                                self.limit.saturating_sub(MARGIN) / 1024
                            ),
                        ));
                    }
                    self.body = length - 4;
                }
                n
            };
            bytes = &bytes[passed..];
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Capped<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if self.framing {
            self.scan(&buf.filled()[before..])?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Capped<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: TlsStream + Unpin> TlsStream for Capped<S> {
    fn channel_binding(&self) -> ChannelBinding {
        self.inner.channel_binding()
    }
}

/// A socket to one place, connected when first used (so that a failure is
/// tokio-postgres's typed I/O error): each address a name resolves to is
/// tried in turn, each within the connect timeout, with TCP keepalives as
/// the URL asks.
pub(crate) struct Lazy {
    state: State,
}

enum State {
    Connecting(BoxFuture<'static, io::Result<Socket>>),
    Open(Socket),
    Failed,
}

enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Lazy {
    fn new(config: &tokio_postgres::Config, target: Target) -> Lazy {
        let timeout = config.get_connect_timeout().copied().unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let keepalive = config.get_keepalives().then(|| config.get_keepalives_idle());
        let connecting = async move {
            let addresses: Vec<std::net::SocketAddr> = match &target.kind {
                TargetKind::Unix(dir) => {
                    let path = dir.join(format!(".s.PGSQL.{}", target.port));
                    let socket = tokio::time::timeout(timeout, UnixStream::connect(path)).await;
                    return Ok(Socket::Unix(socket.map_err(|_| timed_out())??));
                }
                TargetKind::Tcp(Some(address)) => vec![(*address, target.port).into()],
                TargetKind::Tcp(None) if target.name.is_empty() => {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "no host is configured"));
                }
                TargetKind::Tcp(None) => {
                    let lookup = tokio::net::lookup_host((target.name.as_str(), target.port));
                    tokio::time::timeout(timeout, lookup).await.map_err(|_| timed_out())??.collect()
                }
            };
            let mut last = io::Error::new(io::ErrorKind::NotFound, format!("`{}` resolves to no address", target.name));
            for address in addresses {
                match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
                    Ok(Ok(socket)) => {
                        socket.set_nodelay(true)?;
                        if let Some(idle) = keepalive {
                            let keepalive = socket2::TcpKeepalive::new().with_time(idle);
                            socket2::SockRef::from(&socket).set_tcp_keepalive(&keepalive)?;
                        }
                        return Ok(Socket::Tcp(socket));
                    }
                    Ok(Err(error)) => last = error,
                    Err(_) => last = timed_out(),
                }
            }
            Err(last)
        };
        Lazy { state: State::Connecting(Box::pin(connecting)) }
    }

    fn socket(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&mut Socket>> {
        if let State::Connecting(connecting) = &mut self.state {
            match ready!(connecting.as_mut().poll(cx)) {
                Ok(socket) => self.state = State::Open(socket),
                Err(error) => {
                    self.state = State::Failed;
                    return Poll::Ready(Err(error));
                }
            }
        }
        match &mut self.state {
            State::Open(socket) => Poll::Ready(Ok(socket)),
            State::Failed => Poll::Ready(Err(io::Error::new(io::ErrorKind::NotConnected, "the connection failed"))),
            State::Connecting(_) => unreachable!("settled above"),
        }
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "timed out connecting")
}

impl AsyncRead for Lazy {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match ready!(self.socket(cx))? {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Lazy {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match ready!(self.socket(cx))? {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match ready!(self.socket(cx))? {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match ready!(self.socket(cx))? {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: usize) -> Vec<u8> {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&u32::try_from(body + 4).unwrap().to_be_bytes());
        bytes.extend(std::iter::repeat_n(b'x', body));
        bytes
    }

    #[test]
    fn messages_are_followed_across_reads_and_one_over_the_limit_fails() {
        let mut capped = Capped::new((), 100, 1, Arc::default());
        let mut stream = vec![b'N'];
        stream.extend(message(b'R', 4));
        stream.extend(message(b'D', 100 - 4));
        // Any split of the stream into reads follows the same boundaries.
        for size in [1, 2, 3, 7, stream.len()] {
            capped.skip = 1;
            for piece in stream.chunks(size) {
                capped.scan(piece).unwrap();
            }
            assert_eq!((capped.body, capped.have), (0, 0));
        }
        let error = capped.scan(&message(b'D', 101)).unwrap_err().to_string();
        assert!(error.contains(OVER_CAP), "{error}");
        assert_eq!(capped.overflows.load(Ordering::Relaxed), 1);
    }
}
