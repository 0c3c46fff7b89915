//! Sending a request the guard let through: to the addresses it checked
//! (no second DNS lookup), over TLS verified against the system's roots for
//! `https`, with the connect, first-byte and between-bytes limits of the
//! connector, and a response body that stops at the connector's cap.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::uri::Scheme;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, WasiBody};

/// The limits of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) connect: Duration,
    pub(crate) first_byte: Duration,
    pub(crate) between_bytes: Duration,
    pub(crate) max_body: u64,
}

/// The connection's driver, for wasi-http to await after the response.
pub(crate) type Driver = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// Send `request` to the first of `addresses` that accepts a connection.
pub(crate) async fn send(
    mut request: http::Request<WasiBody>,
    addresses: &[SocketAddr],
    limits: Limits,
) -> Result<(http::Response<WasiBody>, Driver), Error> {
    let tcp = match tokio::time::timeout(limits.connect, TcpStream::connect(addresses)).await {
        Ok(stream) => stream.map_err(Error::Connect)?,
        Err(_) => return Err(Error::ConnectionTimeout),
    };
    let _ = tcp.set_nodelay(true);
    let https = request.uri().scheme() == Some(&Scheme::HTTPS);
    let (mut sender, connection) = if https {
        let host = request.uri().host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
        let name =
            rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|_| Error::HttpRequestUriInvalid)?;
        let tls = tokio_rustls::TlsConnector::from(tls_config());
        let stream = tokio::time::timeout(limits.connect, tls.connect(name, tcp))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Tls)?;
        handshake(Box::new(stream), limits).await?
    } else {
        handshake(Box::new(tcp), limits).await?
    };
    // The request line carries the path only; `Host` has the authority.
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    *request.uri_mut() = http::Uri::builder().path_and_query(path).build().map_err(|_| Error::HttpRequestUriInvalid)?;

    let mut connection = Some(Box::pin(connection));
    let response = {
        let mut sent = std::pin::pin!(tokio::time::timeout(limits.first_byte, sender.send_request(request)));
        // Drive the connection while waiting for the response head.
        std::future::poll_fn(|cx| {
            if let Poll::Ready(result) = sent.as_mut().poll(cx) {
                return Poll::Ready(result);
            }
            if let Some(driving) = connection.as_mut()
                && driving.as_mut().poll(cx).is_ready()
            {
                // Closed or failed: the request's own future says how.
                connection = None;
                return sent.as_mut().poll(cx);
            }
            Poll::Pending
        })
        .await
    };
    let response = response.map_err(|_| Error::ConnectionReadTimeout)?.map_err(Error::from)?;
    if let Some(length) = response.body().size_hint().exact()
        && length > limits.max_body
    {
        return Err(Error::HttpResponseBodySize(Some(length)));
    }
    let response = response.map(|incoming| {
        Capped { incoming, left: limits.max_body, cap: limits.max_body, between: limits.between_bytes, timer: None }
            .boxed_unsync()
    });
    let driver: Driver = Box::new(async move {
        match connection {
            Some(connection) => connection.await.map_err(Error::from),
            None => Ok(()),
        }
    });
    Ok((response, driver))
}

type Stream = Box<dyn AsyncIo>;
trait AsyncIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> AsyncIo for T {}

async fn handshake(
    stream: Stream,
    limits: Limits,
) -> Result<
    (
        hyper::client::conn::http1::SendRequest<WasiBody>,
        hyper::client::conn::http1::Connection<TokioIo<Stream>, WasiBody>,
    ),
    Error,
> {
    tokio::time::timeout(limits.connect, hyper::client::conn::http1::handshake(TokioIo::new(stream)))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::from)
}

/// One TLS configuration for every connector: the system's roots.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            let config =
                rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .with_safe_default_protocol_versions()
                    .expect("ring supports the default protocol versions")
                    .with_root_certificates(roots)
                    .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// A response body that ends with `HTTP-response-body-size` past the cap
/// and `connection-read-timeout` when the server goes quiet.
struct Capped {
    incoming: hyper::body::Incoming,
    left: u64,
    cap: u64,
    between: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Body for Capped {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(Error::from(error)))),
            Poll::Ready(Some(Ok(frame))) => {
                self.timer = None;
                let size = frame.data_ref().map_or(0, |d| d.len() as u64);
                if size > self.left {
                    let cap = self.cap;
                    self.left = 0;
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(cap + 1)))));
                }
                self.left -= size;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                let between = self.between;
                let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(between)));
                ready!(timer.as_mut().poll(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}
