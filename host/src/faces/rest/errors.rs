//! The one place errors become HTTP answers: a status per error kind, and
//! the body that says what went wrong and how to fix it.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, ErrorKind, GuestErrorKind, UpstreamFault};

/// An error of the API itself.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ApiError {
    /// What went wrong.
    pub(crate) error: String,
    /// How to fix it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

/// The HTTP status of an error: 4xx for the caller's mistakes (a name
/// that does not exist, input that does not fit, an action above its
/// grant), 5xx for faults of the plugin, the upstream server or the host.
pub(crate) fn status_of(error: &Error) -> StatusCode {
    match error {
        Error::Guest { kind, .. } => match kind {
            GuestErrorKind::InvalidInput => StatusCode::UNPROCESSABLE_ENTITY,
            GuestErrorKind::NotFound => StatusCode::NOT_FOUND,
            GuestErrorKind::Denied => StatusCode::FORBIDDEN,
            GuestErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            GuestErrorKind::Failed => StatusCode::INTERNAL_SERVER_ERROR,
        },
        Error::Upstream { fault: UpstreamFault::Timeout, .. } | Error::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        Error::Upstream { .. } => StatusCode::BAD_GATEWAY,
        other => match other.kind() {
            ErrorKind::UnknownTool | ErrorKind::UnknownPlugin | ErrorKind::UnknownAction => StatusCode::NOT_FOUND,
            ErrorKind::InputNotJson | ErrorKind::InputSchema | ErrorKind::InvalidArguments => StatusCode::BAD_REQUEST,
            ErrorKind::Denied | ErrorKind::AboveCeiling | ErrorKind::OutOfScope => StatusCode::FORBIDDEN,
            ErrorKind::NotCallable => StatusCode::CONFLICT,
            ErrorKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        },
    }
}

/// The answer to a request that failed with `error`.
pub(crate) fn error_response(error: &Error) -> Response {
    let body = ApiError { error: error.to_string(), fix: error.remedy().map(std::borrow::Cow::into_owned) };
    (status_of(error), Json(body)).into_response()
}

/// The answer to a request the API does not accept (a bad page, say).
pub(crate) fn bad_request(error: String, fix: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(ApiError { error, fix: Some(fix.to_owned()) })).into_response()
}
