//! The `http` capability: outbound HTTP for connectors, deny by default,
//! allow what the operator listed, add the credentials the host holds.
//!
//! Grant: [`HttpGrant`], the connector's allow-list, its own origin and
//! credential, its time limits and response cap. Per-call state:
//! [`HttpState`], wasi-http's context plus [`HttpPolicy`], the hooks every
//! request passes. `wasi:http/outgoing-handler` is a connector's only way
//! out (raw sockets are never granted) and only connectors are linked with
//! it. Every request, including each redirect hop the guest follows, goes:
//!
//! 1. [`headers`]: the guest sets only standard content headers and the
//!    ones its API declares; never `Authorization`, `Cookie`, `Host`, the
//!    credential's own header or the trace context, which the host sets
//!    (the `forbidden` header error, when it tries);
//! 2. [`guard`]: the allow-list, then one DNS lookup whose every answer is
//!    checked against loopback, private, link-local and metadata ranges;
//! 3. [`credentials`]: added only when the request's origin is the
//!    connector's own (an OAuth2 token is asked for by the host, through
//!    the same guard: see [`oauth2`]);
//! 4. [`send`]: to the checked address, within the limits;
//! 5. [`redact`]: every form of the credentials the host holds taken out
//!    of the response (headers and streaming body) before the guest reads
//!    it, for an API that echoes its request.
//!
//! A refusal reaches the guest as a typed WASI error
//! (`HTTP-request-denied`, `destination-IP-prohibited`,
//! `HTTP-response-body-size`...), never as a trap.

mod capability;
mod credentials;
mod grant;
mod guard;
mod headers;
mod oauth2;
mod origin;
mod redact;
mod send;
mod settings;
mod token;

pub(crate) use self::capability::{HttpState, link};
pub use self::credentials::{Credential, RawAuth};
pub use self::grant::HttpGrant;
pub use self::guard::{Resolve, SystemResolver};
pub use self::headers::forbidden_to_guests;
pub use self::origin::AllowedHost;
pub use self::settings::HttpSection;
