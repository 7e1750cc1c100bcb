//! gRPC deadlines for [tonic] on shardwheel's timers, in both directions.
//!
//! - [`Server`] serves a tonic router over HTTP/2 with each call run within its deadline: the
//!   earlier of the caller's `grpc-timeout` and the server's own timeout. The handler runs in
//!   a `shardwheel::deadline` scope of it; a call whose deadline passes is answered
//!   `DEADLINE_EXCEEDED`, never `CANCELLED` or `UNKNOWN`, and its handler is dropped (a
//!   streaming call's deadline bounds it up to its response's head).
//!   [`DeadlineLayer`] is that layer alone.
//! - [`PropagateLayer`] wraps a tonic `Channel`: every call made inside a deadline scope (a
//!   handler's) sends what is left of it as its `grpc-timeout`, and fails with
//!   `DEADLINE_EXCEEDED` once it passes, or at once if it has passed already. A handler
//!   that calls another service passes its deadline on without a line of its own.
//!
//! ```no_run
//! use std::time::Duration;
//! use shardwheel_tonic::{PropagateLayer, Server};
//!
//! # async fn run(routes: tonic::service::Routes) -> Result<(), Box<dyn std::error::Error>> {
//! let engine = shardwheel::default_engine().clone();
//! // The client a handler calls the next service through.
//! let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:50052").connect_lazy();
//! let backend = tower::ServiceBuilder::new()
//!     .layer(PropagateLayer::new(engine.clone()))
//!     .service(channel);
//! # drop(backend);
//! // The server: five seconds at most for any call, less if its caller says so.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
//! Server::new(engine).timeout(Duration::from_secs(5)).serve(listener, routes).await?;
//! # Ok(())
//! # }
//! ```
//!
//! What a malformed, repeated or out-of-range `grpc-timeout` gets is grpc-go's answer: see
//! [`DeadlineLayer`].
//!
//! [tonic]: https://docs.rs/tonic

#![warn(missing_docs)]

mod client;
mod header;
mod server;

pub use client::{CallFuture, Propagate, PropagateLayer};
pub use server::{DeadlineLayer, DeadlineService, ResponseFuture, Server};

/// The error of the layers' services: the inner service's, or a [`tonic::Status`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
