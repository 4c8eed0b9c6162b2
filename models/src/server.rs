//! [`ModelServer`]: what the model's clients talk to. By default one
//! server, the plain server core exactly as before (`check --servers 1`);
//! with `--servers 2` an [`Ensemble`] of a leader and a follower that
//! applies the committed log when the checker chooses (`Action::Apply`),
//! so stale reads on the follower are explored exhaustively within the lag
//! budget (`--lag`).
//!
//! Both dereference to the committed state (the one server, or the
//! leader's copy): what the properties judge.

use std::ops::Deref;
use zk_recipes::zk::{SessionId, Zxid};
use zk_sim::ensemble::{Ensemble, ServerIndex};
use zk_sim::server::ZkServer;

/// The servers of a model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ModelServer {
    /// One server: requests are applied when they reach it.
    One(ZkServer),
    /// A leader (server 0) and followers; every server applies the log in
    /// order, a follower at the checker's pace.
    Ensemble(Ensemble),
}

impl ModelServer {
    /// The ensemble, if the model has more than one server.
    pub fn ensemble(&self) -> Option<&Ensemble> {
        match self {
            ModelServer::One(_) => None,
            ModelServer::Ensemble(ensemble) => Some(ensemble),
        }
    }

    pub fn ensemble_mut(&mut self) -> Option<&mut Ensemble> {
        match self {
            ModelServer::One(_) => None,
            ModelServer::Ensemble(ensemble) => Some(ensemble),
        }
    }

    /// The one server, if the model has only one.
    pub fn one_mut(&mut self) -> Option<&mut ZkServer> {
        match self {
            ModelServer::One(server) => Some(server),
            ModelServer::Ensemble(_) => None,
        }
    }

    /// How many servers.
    pub fn servers(&self) -> usize {
        self.ensemble().map_or(1, Ensemble::servers)
    }

    /// The committed state: what the properties judge.
    pub fn committed(&self) -> &ZkServer {
        match self {
            ModelServer::One(server) => server,
            ModelServer::Ensemble(ensemble) => ensemble.committed(),
        }
    }

    /// Committed transactions `server` has not applied yet (0 with one server).
    pub fn lag(&self, server: ServerIndex) -> usize {
        self.ensemble().map_or(0, |ensemble| ensemble.lag(server))
    }

    /// The largest lag of any server.
    pub fn max_lag(&self) -> usize {
        (0..self.servers())
            .map(|server| self.lag(server))
            .max()
            .unwrap_or(0)
    }

    /// The server the session is connected to (with one server: none is
    /// tracked, the model's client state says it).
    pub fn server_of(&self, session: SessionId) -> Option<ServerIndex> {
        self.ensemble()?.server_of(session)
    }

    /// `server` would take a client that has seen up to `last_zxid` (it
    /// is not behind it).
    pub fn accepts(&self, server: ServerIndex, last_zxid: Zxid) -> bool {
        match self {
            ModelServer::One(_) => server == 0,
            ModelServer::Ensemble(ensemble) => ensemble.server(server).last_zxid() >= last_zxid,
        }
    }
}

impl Deref for ModelServer {
    type Target = ZkServer;

    fn deref(&self) -> &ZkServer {
        self.committed()
    }
}
