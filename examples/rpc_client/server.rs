//! The server: answers each request after the service delay, or after the late delay for the
//! requests the seed picks, and logs which were late.

use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::support::{lock, mix, threshold};
use super::wire::{answer, decode, encode, read_frame, FRAME};
use super::Config;

/// What the server decided, shared with the checks at the end.
pub(super) struct ServerLog {
    /// Ids of the requests answered late.
    pub(super) late: Mutex<Vec<u64>>,
}

pub(super) async fn serve(listener: TcpListener, config: Config, log: Arc<ServerLog>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let (config, log) = (config.clone(), log.clone());
                tokio::spawn(async move {
                    if let Err(e) = serve_connection(stream, config, log).await {
                        eprintln!("rpc_client: server connection failed: {e}");
                    }
                });
            }
            Err(e) => {
                eprintln!("rpc_client: accept failed: {e}");
                return;
            }
        }
    }
}

/// Answers every request on `stream`, each after its own delay, in whatever order the delays
/// end; closes the stream once the client has stopped sending and every answer is written.
async fn serve_connection(
    stream: TcpStream,
    config: Config,
    log: Arc<ServerLog>,
) -> Result<(), std::io::Error> {
    stream.set_nodelay(true)?;
    let (mut reader, mut writer) = stream.into_split();
    let (responses, mut outbox) = mpsc::unbounded_channel::<[u8; FRAME]>();
    let write_all = tokio::spawn(async move {
        while let Some(frame) = outbox.recv().await {
            writer.write_all(&frame).await?;
        }
        writer.shutdown().await
    });
    // Whether a request is late depends on its id and the seed only: reproducible whatever
    // order the connections are accepted in.
    let late_threshold = threshold(config.late_fraction);
    while let Some(frame) = read_frame(&mut reader).await? {
        let (id, value) = decode(&frame);
        let response = encode(id, answer(value));
        let late = config.late_fraction > 0.0 && mix(id ^ mix(config.seed)) < late_threshold;
        let delay = if late {
            lock(&log.late).push(id);
            config.late_delay()
        } else {
            config.service
        };
        if delay.is_zero() {
            // The writer only stops when every sender is gone: it cannot have.
            let _ = responses.send(response);
        } else {
            let responses = responses.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = responses.send(response);
            });
        }
    }
    drop(responses);
    write_all
        .await
        .map_err(|e| std::io::Error::other(format!("the writer task failed: {e}")))?
}
