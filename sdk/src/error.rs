//! The error type actions return.

use std::fmt;

use crate::wit::quiver::plugin::types::Error as WitError;

/// Why an action failed. The host shows the message to the model, so say
/// what was wrong and, where you can, how to fix it.
///
/// Any `std::error::Error` converts into [`ToolError::Failed`], so `?` works
/// on library errors; use the constructors to pick a more precise kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The input was well-formed but not acceptable.
    InvalidInput(String),
    /// Something the input names does not exist.
    NotFound(String),
    /// The action was refused.
    Denied(String),
    /// A dependency is unreachable or not configured; retrying may work.
    Unavailable(String),
    /// Any other failure.
    Failed(String),
}

impl ToolError {
    /// An [`InvalidInput`](Self::InvalidInput) error from any displayable value.
    pub fn invalid_input(message: impl fmt::Display) -> Self {
        Self::InvalidInput(message.to_string())
    }

    /// A [`NotFound`](Self::NotFound) error from any displayable value.
    pub fn not_found(message: impl fmt::Display) -> Self {
        Self::NotFound(message.to_string())
    }

    /// A [`Denied`](Self::Denied) error from any displayable value.
    pub fn denied(message: impl fmt::Display) -> Self {
        Self::Denied(message.to_string())
    }

    /// An [`Unavailable`](Self::Unavailable) error from any displayable value.
    pub fn unavailable(message: impl fmt::Display) -> Self {
        Self::Unavailable(message.to_string())
    }

    /// A [`Failed`](Self::Failed) error from any displayable value.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, message) = match self {
            Self::InvalidInput(m) => ("invalid input", m),
            Self::NotFound(m) => ("not found", m),
            Self::Denied(m) => ("denied", m),
            Self::Unavailable(m) => ("unavailable", m),
            Self::Failed(m) => ("failed", m),
        };
        write!(f, "{kind}: {message}")
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(error: E) -> Self {
        Self::Failed(error.to_string())
    }
}

impl From<ToolError> for WitError {
    fn from(error: ToolError) -> Self {
        match error {
            ToolError::InvalidInput(m) => WitError::InvalidInput(m),
            ToolError::NotFound(m) => WitError::NotFound(m),
            ToolError::Denied(m) => WitError::Denied(m),
            ToolError::Unavailable(m) => WitError::Unavailable(m),
            ToolError::Failed(m) => WitError::Failed(m),
        }
    }
}
