//! Errors from checking one stage's parameters (manifest::validate -> `kinds`'
//! `StageParams::read`): the one error type of reading a stage's parameters, from its
//! parameter struct's checks and from deserializing its table alike.
//!
//! A stage's parameter struct reports which field is wrong; validation turns the field into a
//! `file:line:col` location in the manifest (the stage's table when no one field is at fault).

/// A parameter value a stage cannot accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The parameter's key in the stage table, e.g. `batch_size` (or `sizes` for a list
    /// element); empty when the problem is not in one key ([`ParamError::unlocated`]).
    pub field: String,
    /// What is wrong, e.g. "must be at least 1, got 0".
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl ParamError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            hint: None,
        }
    }

    /// A problem with the stage's table as a whole.
    pub fn unlocated(message: impl Into<String>) -> Self {
        Self {
            field: String::new(),
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// `value` of `field` at most `max`: else "must be at most {max}, got {value}".
pub fn at_most<T: PartialOrd + std::fmt::Display>(field: &str, value: T, max: T) -> Result<(), ParamError> {
    if value > max {
        Err(ParamError::new(field, format!("must be at most {max}, got {value}")))
    } else {
        Ok(())
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "`{}`: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ParamError {}
