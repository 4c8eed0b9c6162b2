//! [`Connector`]: the real crate's connect builder. Connecting claims the
//! simulated client's current session (the world opens it, and a new one
//! after an expiry); the options the simulation cannot honour are accepted
//! and ignored (see the module `sim`).

use super::client::Client;
use super::paths::Root;
use super::types::SessionInfo;
use super::Error;
use std::time::Duration;
use zk_recipes::zk::Request;
use zk_sim::async_recipe::Bridge;
use zk_sim::client::ConnectionState;

/// How a [`Client`] is opened: [`Client::connect`] with the defaults, or a
/// [`Connector`] with options (here rather than in `client.rs`, which does
/// not need the builder).
impl Client {
    /// Connects to the simulated ensemble (any connect string; a chroot
    /// suffix is honoured).
    pub async fn connect(cluster: &str) -> Result<Self, Error> {
        Self::connector().connect(cluster).await
    }

    /// A builder with options.
    pub fn connector() -> Connector {
        Connector::new()
    }
}

/// Builds a [`Client`] with options.
#[derive(Clone, Debug, Default)]
pub struct Connector {
    session: Option<SessionInfo>,
    session_timeout: Duration,
    connection_timeout: Duration,
    readonly: bool,
    detached: bool,
    fail_eagerly: bool,
    server_version: Option<(u32, u32, u32)>,
    /// Identities to authenticate as, sent first on the session.
    auths: Vec<(String, Vec<u8>)>,
}

impl Connector {
    pub(crate) fn new() -> Connector {
        Connector::default()
    }

    /// The session timeout to ask for (the simulation uses the world's).
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// The session timeout to ask for (the simulation uses the world's).
    #[deprecated(since = "0.11.0", note = "use Connector::with_session_timeout instead")]
    pub fn session_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.session_timeout = timeout;
        self
    }

    /// Idle time after which a connection counts as lost (the simulation's
    /// session layer decides).
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// Idle time after which a connection counts as lost (ignored).
    #[deprecated(
        since = "0.11.0",
        note = "use Connector::with_connection_timeout instead"
    )]
    pub fn connection_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.connection_timeout = timeout;
        self
    }

    /// Whether a read-only session is allowed (simulated sessions are
    /// never read-only).
    pub fn with_readonly(mut self, readonly: bool) -> Self {
        self.readonly = readonly;
        self
    }

    /// Whether a read-only session is allowed (ignored).
    #[deprecated(since = "0.11.0", note = "use Connector::with_readonly instead")]
    pub fn readonly(&mut self, readonly: bool) -> &mut Self {
        self.readonly = readonly;
        self
    }

    /// An identity to authenticate as: sent first on the session, as
    /// [`Client::auth`] sends it (`digest` or `ip`; another scheme fails
    /// the connect naming it).
    pub fn with_auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auths.push((scheme.to_string(), auth.to_vec()));
        self
    }

    /// An identity to authenticate as.
    #[deprecated(since = "0.11.0", note = "use Connector::with_auth instead")]
    pub fn auth(&mut self, scheme: String, auth: Vec<u8>) -> &mut Self {
        self.auths.push((scheme, auth));
        self
    }

    /// The session to bind to: the client's live session (else connecting
    /// fails SessionExpired).
    pub fn with_session(mut self, session: SessionInfo) -> Self {
        self.session = Some(session);
        self
    }

    /// The session to bind to.
    #[deprecated(since = "0.11.0", note = "use Connector::with_session instead")]
    pub fn session(&mut self, session: SessionInfo) -> &mut Self {
        self.session = Some(session);
        self
    }

    /// The server version to speak to (the simulated server is 3.8-like).
    pub fn with_server_version(mut self, major: u32, minor: u32, patch: u32) -> Self {
        self.server_version = Some((major, minor, patch));
        self
    }

    /// The server version to speak to (ignored).
    #[deprecated(since = "0.11.0", note = "use Connector::with_server_version instead")]
    pub fn server_version(&mut self, major: u32, minor: u32, patch: u32) -> &mut Self {
        self.server_version = Some((major, minor, patch));
        self
    }

    /// Keep the session when every handle dropped (simulated sessions
    /// always stay: the world owns them).
    pub fn with_detached(mut self) -> Self {
        self.detached = true;
        self
    }

    /// Keep the session when every handle dropped (always so).
    #[deprecated(since = "0.11.0", note = "use Connector::with_detached instead")]
    pub fn detached(&mut self) -> &mut Self {
        self.detached = true;
        self
    }

    /// Fail at once when no host answers (the simulation waits for the
    /// world's session).
    pub fn with_fail_eagerly(mut self) -> Self {
        self.fail_eagerly = true;
        self
    }

    /// Fail at once when no host answers (ignored).
    #[deprecated(since = "0.11.0", note = "use Connector::with_fail_eagerly instead")]
    pub fn fail_eagerly(&mut self) -> &mut Self {
        self.fail_eagerly = true;
        self
    }

    /// Connects: waits for the simulated client's session no handle has
    /// claimed yet (or binds to the given live session).
    pub async fn connect(self, cluster: &str) -> Result<Client, Error> {
        let root = Root::of_connect_string(cluster)?;
        // Outside a madsim runtime there is no node to ask about.
        let in_simulation = madsim::runtime::Handle::try_current().is_ok();
        let Some(bridge) = in_simulation.then(Bridge::of_current_node).flatten() else {
            return Err(Error::UnexpectedError(
                "zkcheck's simulated zookeeper-client runs only inside zkcheck's simulation \
                 (a task of a simulated async client): no simulated client on this node"
                    .to_string(),
            ));
        };
        if let Some(session) = self.session {
            if bridge.state(session.zk_id()) == ConnectionState::Expired {
                return Err(Error::SessionExpired);
            }
            return Ok(Client::new(bridge, session.id(), root));
        }
        if let Some((scheme, _)) = self.auths.iter().find(|(scheme, _)| !is_simulated(scheme)) {
            return Err(super::errors::uncovered(&format!(
                "with_auth` with scheme `{scheme}"
            )));
        }
        let session = bridge
            .claim()
            .await
            .map_err(|error| Error::UnexpectedError(error.to_string()))?;
        let client = Client::new(bridge, upstream::SessionId(session.0), root);
        // Ordered at the call, ahead of every request of the application;
        // the replies are not awaited (the crate answers them itself).
        for (scheme, auth) in self.auths {
            drop(client.submit(Request::AddAuth { scheme, auth }));
        }
        Ok(client)
    }
}

/// The auth schemes the simulated server has providers for.
fn is_simulated(scheme: &str) -> bool {
    matches!(scheme, "digest" | "ip")
}
