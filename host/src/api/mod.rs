//! The /v1 handlers: request validation and wire shapes, one module per resource.

pub mod jobs;
pub mod openapi;
pub mod results;
pub mod uploads;
