//! `multipart/form-data` bodies (skill and file uploads): every part read
//! whole within the route's body limit (413 beyond), then handed to the
//! handler as named parts. A body that is not multipart, or is cut off, is a
//! 400 that says so.

use crate::error::ApiError;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;

/// One part: its field name, its file name (for a file), and its bytes.
#[derive(Debug)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub data: Vec<u8>,
}

/// A whole multipart body.
#[derive(Debug, Default)]
pub struct Form {
    pub parts: Vec<Part>,
}

fn rejected(status: StatusCode, text: String) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::too_large(format!("the upload is larger than this endpoint accepts: {text}"))
    } else {
        ApiError::invalid_with(None, "invalid_multipart", format!("the body must be multipart/form-data: {text}"))
    }
}

fn part_error(e: MultipartError) -> ApiError {
    rejected(e.status(), e.body_text())
}

fn rejection(e: MultipartRejection) -> ApiError {
    use axum::response::IntoResponse;
    let status = e.status();
    let text = e.body_text();
    drop(e.into_response());
    rejected(status, text)
}

impl<S: Send + Sync> FromRequest<S> for Form {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let mut multipart = Multipart::from_request(req, state).await.map_err(rejection)?;
        let mut form = Form::default();
        while let Some(field) = multipart.next_field().await.map_err(part_error)? {
            let name = field.name().unwrap_or_default().to_string();
            let filename = field.file_name().map(str::to_string);
            let data = field.bytes().await.map_err(part_error)?.to_vec();
            form.parts.push(Part { name, filename, data });
        }
        Ok(form)
    }
}

impl Form {
    /// Refuses parts whose names are not in `allowed`.
    pub fn only(&self, allowed: &[&str]) -> Result<(), ApiError> {
        match self.parts.iter().find(|p| !allowed.contains(&p.name.as_str())) {
            Some(p) => Err(ApiError::invalid(p.name.clone(), format!("unknown field '{}'", p.name))),
            None => Ok(()),
        }
    }

    /// The text of the part `name`, if any (the last one given).
    pub fn text(&self, name: &str) -> Result<Option<String>, ApiError> {
        let Some(part) = self.parts.iter().rev().find(|p| p.name == name) else { return Ok(None) };
        String::from_utf8(part.data.clone())
            .map(Some)
            .map_err(|_| ApiError::invalid(name, format!("{name} must be text")))
    }

    /// The parts named one of `names`, in order, taken out of the form.
    pub fn take(&mut self, names: &[&str]) -> Vec<Part> {
        let (taken, rest) = std::mem::take(&mut self.parts).into_iter().partition(|p| names.contains(&p.name.as_str()));
        self.parts = rest;
        taken
    }
}
