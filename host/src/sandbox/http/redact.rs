//! The host's credentials taken out of a response before the guest sees
//! it: an API that echoes what it received (its request headers, the URL
//! with the query key) would otherwise hand them to the guest, and through
//! it to the model.
//!
//! Every form of a credential the host sent is replaced by `[redacted]`
//! (the [`Redaction`] the audit log uses too): in header values (a header
//! whose name holds one is dropped), in trailers, and in the body as it
//! streams, holding back as many bytes as the longest form less one, so
//! that a value split across frames is still found whole. The body's
//! length may change, so `Content-Length` is removed.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http::header::CONTENT_LENGTH;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, WasiBody};

use crate::sandbox::secrets::{REDACTED, Redaction, Secret};

/// The redaction of what a connector's responses may echo, kept between
/// its requests and built again only when that changes (a new OAuth2
/// token): building one costs tens of µs, more than the rest of the hook.
#[derive(Clone, Default)]
pub(crate) struct Echoes(Arc<Mutex<Option<Built>>>);

/// A redaction and the forms it was built from.
type Built = (Vec<Secret>, Arc<Redaction>);

impl Echoes {
    /// The redaction of `forms`.
    pub(crate) fn redaction(&self, forms: Vec<Secret>) -> Arc<Redaction> {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match last.as_ref() {
            Some((known, redaction)) if *known == forms => Arc::clone(redaction),
            _ => {
                let redaction = Arc::new(Redaction::new(&forms));
                *last = Some((forms, Arc::clone(&redaction)));
                redaction
            }
        }
    }
}

/// A cache: it says nothing about the grant that holds it.
impl PartialEq for Echoes {
    fn eq(&self, _: &Echoes) -> bool {
        true
    }
}

impl std::fmt::Debug for Echoes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Echoes")
    }
}

/// `response` with `redaction` applied to its headers and body.
pub(crate) fn response(response: http::Response<WasiBody>, redaction: Arc<Redaction>) -> http::Response<WasiBody> {
    let (mut parts, body) = response.into_parts();
    scrub_headers(&mut parts.headers, &redaction);
    parts.headers.remove(CONTENT_LENGTH);
    let body = Redacted { inner: body, redaction, held: Vec::new(), trailers: None, ended: false };
    http::Response::from_parts(parts, body.boxed_unsync())
}

/// `headers` with every secret in a value replaced, and every header whose
/// name holds one dropped.
fn scrub_headers(headers: &mut HeaderMap, redaction: &Redaction) {
    let holds = |bytes: &[u8]| redaction.occurrences(bytes).next().is_some();
    if !headers.iter().any(|(name, value)| holds(name.as_str().as_bytes()) || holds(value.as_bytes())) {
        return;
    }
    let mut name = None;
    for (next, value) in std::mem::take(headers) {
        name = next.or(name);
        let Some(name) = name.as_ref().filter(|n| !holds(n.as_str().as_bytes())) else { continue };
        if let Ok(value) = http::HeaderValue::from_bytes(&redaction.scrub_bytes(value.as_bytes())) {
            headers.append(name.clone(), value);
        }
    }
}

/// A response body with the secrets of `redaction` replaced, also across
/// frames (see the module documentation).
struct Redacted {
    inner: WasiBody,
    redaction: Arc<Redaction>,
    /// Bytes read but not yet passed on: the tail that may begin a secret.
    held: Vec<u8>,
    /// The trailers, redacted, once the data has all been passed on.
    trailers: Option<HeaderMap>,
    /// Whether the inner body has ended (or sent its trailers).
    ended: bool,
}

impl Redacted {
    /// The redacted bytes that can be passed on now: all of them at the end,
    /// else all but the last `longest - 1` (more when a secret found whole
    /// reaches into them).
    fn release(&mut self, last: bool) -> Bytes {
        let keep = if last { 0 } else { self.redaction.longest().saturating_sub(1) };
        let mut boundary = self.held.len().saturating_sub(keep);
        let mut out = Vec::with_capacity(boundary);
        let mut at = 0;
        for found in self.redaction.occurrences(&self.held) {
            if found.start >= boundary {
                break;
            }
            boundary = boundary.max(found.end);
            out.extend_from_slice(&self.held[at..found.start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = found.end;
        }
        out.extend_from_slice(&self.held[at..boundary]);
        self.held.drain(..boundary);
        Bytes::from(out)
    }
}

impl Body for Redacted {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                if !this.held.is_empty() {
                    return Poll::Ready(Some(Ok(Frame::data(this.release(true)))));
                }
                return Poll::Ready(this.trailers.take().map(|trailers| Ok(Frame::trailers(trailers))));
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                None => this.ended = true,
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        this.held.extend_from_slice(&data);
                        let out = this.release(false);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => {
                        if let Ok(mut trailers) = frame.into_trailers() {
                            scrub_headers(&mut trailers, &this.redaction);
                            this.trailers = Some(trailers);
                        }
                        this.ended = true;
                    }
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.held.is_empty() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of `chunks`, as frames.
    fn body(chunks: Vec<&'static [u8]>) -> WasiBody {
        let frames = chunks.into_iter().map(|c| Ok::<_, Error>(Frame::data(Bytes::from_static(c))));
        http_body_util::StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync()
    }

    async fn redacted(chunks: Vec<&'static [u8]>, secrets: &[&str]) -> (Vec<Bytes>, String) {
        let secrets: Vec<Secret> = secrets.iter().map(|s| Secret::new((*s).to_owned())).collect();
        let mut response = http::Response::new(body(chunks));
        response.headers_mut().insert("x-echo", "Bearer hunter2-token, again hunter2-token".parse().unwrap());
        response.headers_mut().insert(CONTENT_LENGTH, "99".parse().unwrap());
        let response = super::response(response, Arc::new(Redaction::new(&secrets)));
        assert_eq!(response.headers()["x-echo"], "Bearer [redacted], again [redacted]");
        assert!(response.headers().get(CONTENT_LENGTH).is_none());
        let mut body = response.into_body();
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.unwrap().into_data().unwrap());
        }
        let text = frames.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect();
        (frames, text)
    }

    #[tokio::test]
    async fn a_secret_split_across_frames_is_found_whole() {
        let secrets = ["hunter2-token", "hunter2-token-longer"];
        let whole = "{\"authorization\": \"Bearer hunter2-token\", \"and\": \"hunter2-token-longer\"}";
        let expected = "{\"authorization\": \"Bearer [redacted]\", \"and\": \"[redacted]\"}";
        // Every split of the body into two frames, and one byte a frame.
        for at in 0..=whole.len() {
            let (first, second) = whole.split_at(at);
            let (first, second): (&'static str, &'static str) =
                (Box::leak(first.to_owned().into_boxed_str()), Box::leak(second.to_owned().into_boxed_str()));
            let (_, text) = redacted(vec![first.as_bytes(), second.as_bytes()], &secrets).await;
            assert_eq!(text, expected, "split at {at}");
        }
        let bytes: Vec<&'static [u8]> = whole.as_bytes().chunks(1).collect();
        let (frames, text) = redacted(bytes, &secrets).await;
        assert_eq!(text, expected);
        assert!(frames.len() > 2, "the body still streams: {} frames", frames.len());
    }

    #[test]
    fn a_redaction_is_built_again_only_when_the_forms_change() {
        let echoes = Echoes::default();
        let forms = |token: &str| vec![Secret::new("client-s3cret".into()), Secret::new(token.into())];
        let first = echoes.redaction(forms("token-one"));
        assert!(Arc::ptr_eq(&first, &echoes.clone().redaction(forms("token-one"))));
        let second = echoes.redaction(forms("token-two"));
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(second.scrub("token-one token-two"), "token-one [redacted]");
    }

    #[tokio::test]
    async fn frames_pass_on_redacted_or_as_they_are() {
        let (_, text) = redacted(vec![b"hunter", b"2-tok", b"en-no"], &["hunter2-token"]).await;
        assert_eq!(text, "[redacted]-no");
        let (_, text) = redacted(vec![b"nothing ", b"secret here"], &["hunter2-token"]).await;
        assert_eq!(text, "nothing secret here");
    }
}
