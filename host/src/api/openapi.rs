//! The OpenAPI document of the /v1 API, served as written.

use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::Response;

use crate::http::Body;

/// The OpenAPI document, served as written.
pub fn openapi_response() -> Response<Body> {
    let mut resp = Response::new(Body::full(Bytes::from_static(OPENAPI.as_bytes())));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

/// The contract as OpenAPI 3.1.
pub const OPENAPI: &str = include_str!("../../openapi.json");
