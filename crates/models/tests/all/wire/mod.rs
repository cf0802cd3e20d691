//! Each provider against a local server that speaks its exact streaming wire format: the
//! parsed response (text, calls, stop, usage), the text deltas in order, and the request
//! bodies of a two-step tool-using turn (the second carries the first step's calls and
//! results, one of them an error).

mod anthropic;
mod chat;
mod gemini;
mod history;
mod ollama;
mod responses;
mod server;
