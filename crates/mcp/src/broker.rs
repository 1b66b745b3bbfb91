//! Environment-origin connections shared by every session on a sandbox: one [`Broker`] per
//! `(sandbox id, server_label)`. The first launch wins; later users get the running broker
//! without comparing configurations (the spec says so); a broker whose server died, or whose
//! launch failed, fails explicitly from then on and is never started again with a later
//! configuration. Callers share one connection; rmcp matches every answer to its request id.

use crate::connection::Connection;
use crate::error::{McpError, Result};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// Which broker: the sandbox it runs in and the server label within it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerKey {
    pub sandbox: String,
    pub label: String,
}

/// A running environment-origin MCP server and its one client connection.
#[derive(Debug)]
pub struct Broker {
    key: BrokerKey,
    connection: Arc<Connection>,
}

impl Broker {
    pub fn key(&self) -> &BrokerKey {
        &self.key
    }

    /// The shared connection: use it with [`crate::Toolset::with_server`].
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    pub fn is_alive(&self) -> bool {
        !self.connection.is_closed()
    }
}

type Slot = Arc<OnceCell<Result<Arc<Broker>>>>;

/// All brokers of this server process.
#[derive(Debug, Default)]
pub struct BrokerRegistry {
    // A std mutex: held only to find or insert a slot; the launch itself waits on the slot.
    slots: Mutex<HashMap<BrokerKey, Slot>>,
}

impl BrokerRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&self, key: &BrokerKey) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        slots.entry(key.clone()).or_default().clone()
    }

    /// The broker for `(sandbox, label)`, launched with `start` if there is none yet. Callers
    /// arriving while the first launch runs wait for it; `start` of a later caller is never
    /// run. `start` typically spawns the stdio server in the sandbox and calls
    /// [`Connection::connect_stdio`] on its stdout and stdin.
    pub async fn get_or_start<F, Fut>(&self, sandbox: &str, label: &str, start: F) -> Result<Arc<Broker>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Connection>>,
    {
        let key = BrokerKey { sandbox: sandbox.to_owned(), label: label.to_owned() };
        let slot = self.slot(&key);
        let mut launched_here = false;
        let launched = slot
            .get_or_init(|| async {
                launched_here = true;
                let connection = start().await?;
                Ok(Arc::new(Broker { key: key.clone(), connection: Arc::new(connection) }))
            })
            .await;
        match launched {
            // The caller whose launch failed hears why, naming the step; later callers hear
            // that the broker is dead.
            Err(error) if launched_here => Err(error.clone()),
            _ => Self::usable(&key, launched),
        }
    }

    /// The broker for `(sandbox, label)` if one was launched, without launching one.
    pub fn get(&self, sandbox: &str, label: &str) -> Option<Result<Arc<Broker>>> {
        let key = BrokerKey { sandbox: sandbox.to_owned(), label: label.to_owned() };
        let slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let launched = slots.get(&key)?.get()?;
        Some(Self::usable(&key, launched))
    }

    fn usable(key: &BrokerKey, launched: &Result<Arc<Broker>>) -> Result<Arc<Broker>> {
        match launched {
            Ok(broker) if broker.is_alive() => Ok(broker.clone()),
            Ok(_) => Err(McpError::BrokerDead {
                server: key.label.clone(),
                sandbox: key.sandbox.clone(),
                reason: "the server process exited or closed its connection".into(),
            }),
            Err(error) => Err(McpError::BrokerDead {
                server: key.label.clone(),
                sandbox: key.sandbox.clone(),
                reason: format!("its launch failed: {error}"),
            }),
        }
    }

    /// Forgets every broker of a sandbox (the environment was deleted) and returns the launched
    /// ones so the caller can terminate them.
    pub fn remove_sandbox(&self, sandbox: &str) -> Vec<Arc<Broker>> {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let keys: Vec<BrokerKey> = slots.keys().filter(|key| key.sandbox == sandbox).cloned().collect();
        keys.iter()
            .filter_map(|key| slots.remove(key))
            .filter_map(|slot| slot.get().and_then(|launched| launched.as_ref().ok().cloned()))
            .collect()
    }

    /// Number of `(sandbox, label)` slots, launched or launching.
    pub fn len(&self) -> usize {
        self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
