//! The seeded random-walk driver the recipe tests share: one random
//! stepper action per call (steps, lost replies, disconnects, reconnects,
//! expiries noticed or not, timers, the reaper), and a heal that brings
//! every client back to a live, connected session.

use rand::rngs::SmallRng;
use rand::Rng;
use zk_recipes::{Observe, Recipe};
use zk_sim::client::ConnectionState;
use zk_sim::stepper::{ClientId, Stepper};

/// Applies one random driver action to `client`: a step, a lost reply, a
/// disconnect (requests in flight and queued fail) or reconnect, an expiry
/// (noticed at once, then a new session) or, if `pauses`, an expiry the
/// client does not notice (it becomes a zombie until it notices later), a
/// timer, or the container reaper.
pub fn random_action<R: Recipe<Outcome: Observe>>(
    stepper: &mut Stepper<R>,
    rng: &mut SmallRng,
    client: ClientId,
    zombies: &mut [bool],
    next_session: &mut i64,
    pauses: bool,
) {
    let connected = stepper.state(client) == ConnectionState::Connected;
    let healthy = !zombies[client];
    match rng.gen_range(0..100) {
        0..=59 => {
            stepper.step(client);
        }
        60..=64 if connected && healthy => {
            stepper.apply_then_disconnect(client);
        }
        65..=68 if connected && healthy => stepper.disconnect(client),
        69..=76 if stepper.state(client) == ConnectionState::Disconnected => {
            stepper.reconnect(client)
        }
        77..=79 if healthy && stepper.state(client) != ConnectionState::Expired => {
            stepper.expire(client)
        }
        80..=84 if stepper.state(client) == ConnectionState::Expired => {
            *next_session += 1;
            stepper.new_session(client, *next_session);
        }
        85 if pauses && connected && healthy => {
            stepper.expire_on_server(client);
            zombies[client] = true;
        }
        85 if !healthy => {
            stepper.notice_expiry(client);
            zombies[client] = false;
        }
        86..=93 => {
            stepper.fire_next_timer(client);
        }
        94..=99 => stepper.reap(),
        _ => {}
    }
}

/// Brings every client back: a paused one learns its session expired, and
/// all are reconnected, in a live session.
pub fn heal<R: Recipe<Outcome: Observe>>(
    stepper: &mut Stepper<R>,
    zombies: &mut [bool],
    next_session: &mut i64,
) {
    for (client, zombie) in zombies.iter_mut().enumerate() {
        if std::mem::take(zombie) {
            stepper.notice_expiry(client);
        }
        match stepper.state(client) {
            ConnectionState::Disconnected => stepper.reconnect(client),
            ConnectionState::Expired => {
                *next_session += 1;
                stepper.new_session(client, *next_session);
            }
            ConnectionState::Connected => {}
        }
    }
}
