//! Outbound HTTP for connectors, over `wasi:http/outgoing-handler`.
//!
//! Only plugins of kind `connector` may use this: the host refuses to load
//! a tool that imports `wasi:http`. The host checks every request against
//! the operator's allow-list (a refused request is [`ToolError::Denied`])
//! and adds credentials itself, so a plugin never holds secrets.
//!
//! ```ignore
//! let response = quiver_sdk::http::get("https://api.example.com/v1/items")?;
//! let items: Vec<Item> = response.json()?;
//! ```

use crate::ToolError;
use crate::wit::wasi::http::outgoing_handler;
use crate::wit::wasi::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
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

/// Send one request and read the whole response.
pub fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Result<Response, ToolError> {
    let (scheme, authority, path) = split_url(url)?;
    let fields: Vec<(String, Vec<u8>)> =
        headers.iter().map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec())).collect();
    let fields =
        Fields::from_list(&fields).map_err(|e| ToolError::invalid_input(format!("header not allowed: {e:?}")))?;
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
                return Err(ToolError::unavailable(format!(
                    "reading the response of `{url}`: {}",
                    e.to_debug_string()
                )));
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
        ErrorCode::DnsError(_) | ErrorCode::DestinationNotFound => {
            ToolError::unavailable(format!("cannot resolve the host of `{url}`"))
        }
        ErrorCode::ConnectionRefused | ErrorCode::ConnectionTimeout | ErrorCode::DestinationUnavailable => {
            ToolError::unavailable(format!("cannot connect to `{url}`: {error:?}"))
        }
        other => ToolError::failed(format!("request to `{url}` failed: {other:?}")),
    }
}
