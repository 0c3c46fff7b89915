//! Outbound HTTP for connectors, over `wasi:http/outgoing-handler`.
//!
//! Only plugins of kind `connector` may use this: the host refuses to load
//! a tool that imports `wasi:http`. The host checks every request against
//! the operator's allow-list (a refused request is [`ToolError::Denied`])
//! and adds credentials itself, so a plugin never holds secrets: a request
//! that sets one (a credential header, or the API key's query parameter in
//! any spelling) is [`ToolError::Denied`] too, saying that the host sets it.
//!
//! ```ignore
//! let response = quiver_sdk::http::get("https://api.example.com/v1/items")?;
//! let items: Vec<Item> = response.json()?;
//! ```

use crate::ToolError;
use crate::wit::wasi::http::outgoing_handler;
use crate::wit::wasi::http::types::{ErrorCode, Fields, HeaderError, Method, OutgoingBody, OutgoingRequest, Scheme};
use crate::wit::wasi::io::streams::StreamError;

/// Largest response body read into memory.
pub const MAX_BODY: usize = 16 << 20;

/// Bytes written to the request body per call (WASI streams accept 4 KiB
/// per `blocking-write-and-flush`).
const WRITE_CHUNK: usize = 4096;

/// A complete HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, as sent (names lower-case).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as UTF-8 text (invalid sequences replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, ToolError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            ToolError::failed(format!("the response (status {}) is not the expected JSON: {e}", self.status))
        })
    }

    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// `GET url`.
pub fn get(url: &str) -> Result<Response, ToolError> {
    send("GET", url, &[], None)
}

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// Send a request and read the whole response, following up to
/// [`MAX_REDIRECTS`] redirects. Each hop is a request of its own, which the
/// host checks against the allow-list again; it adds credentials only on
/// the connector's own origin, so a hop elsewhere carries none.
pub fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Result<Response, ToolError> {
    let (mut method, mut url, mut body) = (method.to_ascii_uppercase(), url.to_owned(), body);
    for _ in 0..=MAX_REDIRECTS {
        let response = send_once(&method, &url, headers, body)?;
        let Some(location) =
            response.header("location").filter(|_| matches!(response.status, 301 | 302 | 303 | 307 | 308))
        else {
            return Ok(response);
        };
        url = join(&url, location);
        // 303, and 301/302 after anything but GET/HEAD, continue as GET
        // without the body (as browsers do); 307 and 308 repeat the request.
        if response.status == 303 || (matches!(response.status, 301 | 302) && method != "GET" && method != "HEAD") {
            method = "GET".into();
            body = None;
        }
    }
    Err(ToolError::failed(format!("more than {MAX_REDIRECTS} redirects, the last to `{url}`")))
}

/// `location` resolved against `base` (absolute URL, absolute path, or
/// relative path).
fn join(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if let Some(network_path) = location.strip_prefix("//") {
        return format!("{scheme}://{network_path}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let path = path.split('?').next().unwrap_or("");
    let folder = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let folder = if folder.is_empty() { "/" } else { folder };
    format!("{scheme}://{authority}{folder}{location}")
}

fn send_once(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Result<Response, ToolError> {
    let (scheme, authority, path) = split_url(url)?;
    let fields: Vec<(String, Vec<u8>)> =
        headers.iter().map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec())).collect();
    let fields = Fields::from_list(&fields).map_err(|e| match e {
        HeaderError::Forbidden => {
            // Name the header the host refused (the list says only that one was).
            let refused =
                fields.iter().find(|one| matches!(Fields::from_list(&[(*one).clone()]), Err(HeaderError::Forbidden)));
            let name = refused.map_or("one of the headers", |(name, _)| name.as_str());
            ToolError::denied(format!(
                "the host refused the header `{name}`: it sets credential and routing headers itself \
                 (Authorization, Cookie, Host, the API key's header...) and the trace context (traceparent, \
                 tracestate, baggage); send the request without it"
            ))
        }
        other => ToolError::invalid_input(format!("a header is not valid: {other:?}")),
    })?;
    let request = OutgoingRequest::new(fields);
    let method = match method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        "HEAD" => Method::Head,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_owned()),
    };
    let invalid = |what: &str| ToolError::invalid_input(format!("invalid {what} in `{url}`"));
    request.set_method(&method).map_err(|()| invalid("method"))?;
    request.set_scheme(Some(&scheme)).map_err(|()| invalid("scheme"))?;
    request.set_authority(Some(authority)).map_err(|()| invalid("host"))?;
    request.set_path_with_query(Some(path)).map_err(|()| invalid("path"))?;

    let outgoing_body = request.body().map_err(|()| ToolError::failed("request body already taken"))?;
    if let Some(body) = body {
        let stream = outgoing_body.write().map_err(|()| ToolError::failed("request body stream already taken"))?;
        for chunk in body.chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| ToolError::failed(format!("sending the body: {e:?}")))?;
        }
        drop(stream);
    }
    let pending = outgoing_handler::handle(request, None).map_err(|e| http_error(url, e))?;
    OutgoingBody::finish(outgoing_body, None).map_err(|e| http_error(url, e))?;

    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(http_error(url, e)),
        Some(Err(())) | None => return Err(ToolError::failed("the response was already taken")),
    };
    let status = response.status();
    let headers =
        response.headers().entries().into_iter().map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned())).collect();
    let incoming = response.consume().map_err(|()| ToolError::failed("the response body was already taken"))?;
    let stream = incoming.stream().map_err(|()| ToolError::failed("the response body stream was already taken"))?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(ToolError::failed(format!("the response body is over {MAX_BODY} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                // The host's reason (size cap, timeout). wasmtime 48 keeps
                // it as text only on a body stream (`http-error-code` finds
                // no code there), so the text decides.
                if let Some(code) = crate::wit::wasi::http::types::http_error_code(&e) {
                    return Err(http_error(url, code));
                }
                let reason = e.to_debug_string();
                let code = if reason.contains("body size exceeds limit") {
                    ErrorCode::HttpResponseBodySize(None)
                } else if reason.contains("read timeout") || reason.contains("response timeout") {
                    ErrorCode::ConnectionReadTimeout
                } else {
                    return Err(ToolError::unavailable(format!("reading the response of `{url}`: {reason}")));
                };
                return Err(http_error(url, code));
            }
        }
    }
    drop(stream);
    drop(incoming);
    Ok(Response { status, headers, body })
}

fn split_url(url: &str) -> Result<(Scheme, &str, &str), ToolError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| ToolError::invalid_input(format!("`{url}` is not an absolute http(s) URL")))?;
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => return Err(ToolError::invalid_input(format!("scheme `{other}` is not http or https"))),
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.is_empty() {
        return Err(ToolError::invalid_input(format!("`{url}` has no host")));
    }
    Ok((scheme, authority, if path.is_empty() { "/" } else { path }))
}

fn http_error(url: &str, error: ErrorCode) -> ToolError {
    match error {
        ErrorCode::HttpRequestDenied => {
            ToolError::denied(format!("the host does not allow requests to `{url}` (not in this plugin's allow-list)"))
        }
        ErrorCode::DestinationIpProhibited => ToolError::denied(format!(
            "the host does not send requests to `{url}`: it resolves to a loopback, private, link-local or \
             metadata address"
        )),
        ErrorCode::HttpResponseBodySize(_) => ToolError::failed(format!(
            "the response of `{url}` is larger than this connector may read; ask for less (filters, fields, \
             a smaller page)"
        )),
        ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
            ToolError::unavailable(format!("`{url}` did not answer in time (the connector's response timeout)"))
        }
        ErrorCode::DnsError(_) | ErrorCode::DestinationNotFound => {
            ToolError::unavailable(format!("cannot resolve the host of `{url}`"))
        }
        ErrorCode::ConnectionRefused | ErrorCode::ConnectionTimeout | ErrorCode::DestinationUnavailable => {
            ToolError::unavailable(format!("cannot connect to `{url}`: {error:?}"))
        }
        // The host's own reason: the guest set what carries a credential
        // the host adds itself, or a header off the connector's allow-list
        // (refusals the model can act on), or the credential could not be
        // had (the token endpoint failed).
        ErrorCode::InternalError(Some(reason)) => {
            let refused = [quiver_contract::CREDENTIAL_REFUSAL, quiver_contract::HEADER_REFUSAL]
                .iter()
                .find_map(|prefix| reason.strip_prefix(prefix));
            match refused {
                Some(why) => ToolError::denied(format!("request to `{url}`: {why}")),
                None => ToolError::unavailable(format!("request to `{url}`: {reason}")),
            }
        }
        other => ToolError::failed(format!("request to `{url}` failed: {other:?}")),
    }
}
