//! The persistent-watch sequences (`Client::watch` with `AddWatchMode`),
//! written once like [`super::sequences`] and expanded at the same sites
//! (they use its `Norm`, `Env` and helpers): both modes' events on a
//! scripted series of creates, sets and deletes, with a one-shot watch on
//! the same path, a second watcher and a dropped one; then the watches
//! across a lost request (changes made while the client is away) and
//! across a session expiry.
//!
//! After each step, every watcher's events are recorded in order: those
//! that came within a wait, then each next within `QUIET_MS`, up to the
//! session's end (the real crate panics if asked after it).

/// Expands the persistent-watch sequences for one client crate;
/// `define_sequences!` must be expanded in the same module.
macro_rules! define_persistent_sequences {
    ($zk:ident) => {
        use $zk::{AddWatchMode, PersistentWatcher};

        /// The events `watcher` hears: the first within `first_ms`, each
        /// next within `QUIET_MS`, none after the session's end.
        async fn heard(
            env: &Env,
            n: &Norm,
            watcher: &mut PersistentWatcher,
            first_ms: u64,
        ) -> String {
            let mut events = Vec::new();
            let mut wait_ms = first_ms;
            while let Some(event) = env.within(wait_ms, watcher.changed()).await {
                let terminal = event.session_state.is_terminated();
                events.push(n.event(&event));
                if terminal {
                    break;
                }
                wait_ms = QUIET_MS;
            }
            format!("[{}]", events.join(", "))
        }

        /// A write of the scripted series, on a path under the root.
        #[derive(Clone, Copy)]
        enum Write {
            Create(&'static str),
            Set(&'static str),
            Delete(&'static str),
        }

        /// Runs `write` as `zk`, recording its outcome.
        async fn write(zk: &Client, n: &Norm, t: &mut Transcript, write: Write) {
            let r = &n.root;
            match write {
                Write::Create(rel) => t.step(
                    &format!("create ~/{rel}"),
                    n.created(zk.create(&format!("{r}/{rel}"), b"", &persistent()).await),
                ),
                Write::Set(rel) => t.step(
                    &format!("set_data ~/{rel}"),
                    n.stat_result(zk.set_data(&format!("{r}/{rel}"), b"x", None).await),
                ),
                Write::Delete(rel) => t.step(
                    &format!("delete ~/{rel}"),
                    n.unit(zk.delete(&format!("{r}/{rel}"), None).await),
                ),
            }
        }

        /// Both modes on missing paths, through a series of writes; a
        /// one-shot watch on a persistently watched path; two watchers on
        /// one path, one dropped; a watcher dropped, the path watched again.
        async fn persistent_watches(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            use Write::{Create, Delete, Set};
            let r = &n.root;
            let (p, q) = (format!("{r}/p"), format!("{r}/q"));
            let watched = (
                zk.watch(&p, AddWatchMode::Persistent).await,
                zk.watch(&q, AddWatchMode::PersistentRecursive).await,
            );
            let (Ok(mut pw), Ok(mut qw)) = watched else {
                t.step(
                    "watch ~/p and ~/q",
                    format!("{:?}", (watched.0.err(), watched.1.err())),
                );
                return;
            };
            t.step(
                "watch ~/p (persistent) and ~/q (recursive), both missing",
                "ok",
            );
            let series = [
                Create("p"),
                Set("p"),
                Create("p/c"),
                Set("p/c"),
                Delete("p/c"),
                Delete("p"),
                Create("p"),
                Create("q"),
                Create("q/c"),
                Create("q/c/d"),
                Set("q/c/d"),
                Delete("q/c/d"),
                Set("q"),
                Delete("q/c"),
                Delete("q"),
                Create("q"),
            ];
            for step in series {
                write(zk, n, t, step).await;
                t.step("  ~/p's watcher", heard(env, n, &mut pw, QUIET_MS).await);
                t.step("  ~/q's watcher", heard(env, n, &mut qw, QUIET_MS).await);
            }
            let other = env.other();
            let set = other.set_data(&p, b"other", None).await;
            t.step("other session: set_data ~/p", n.stat_result(set));
            t.step("  ~/p's watcher", heard(env, n, &mut pw, FIRE_MS).await);
            // A one-shot watch of the same session on the watched path.
            match zk.get_and_watch_data(&p).await {
                Ok((_, _, oneshot)) => {
                    t.step("get_and_watch_data ~/p", "ok");
                    write(zk, n, t, Set("p")).await;
                    t.step(
                        "  the one-shot watch",
                        fired(env, n, oneshot.changed(), FIRE_MS).await,
                    );
                    t.step("  ~/p's watcher", heard(env, n, &mut pw, QUIET_MS).await);
                }
                Err(e) => t.step("get_and_watch_data ~/p", n.err(&e)),
            }
            for step in [Set("p"), Create("p/x")] {
                write(zk, n, t, step).await;
                t.step("  ~/p's watcher", heard(env, n, &mut pw, QUIET_MS).await);
            }
            // A second watcher on ~/p; then it is dropped.
            let Ok(mut again) = zk.watch(&p, AddWatchMode::Persistent).await else {
                t.step("watch ~/p again", "failed");
                return;
            };
            t.step("watch ~/p again (a second watcher)", "ok");
            write(zk, n, t, Set("p")).await;
            t.step(
                "  ~/p's first watcher",
                heard(env, n, &mut pw, QUIET_MS).await,
            );
            t.step(
                "  ~/p's second watcher",
                heard(env, n, &mut again, QUIET_MS).await,
            );
            drop(again);
            t.step("drop the second watcher", "ok");
            write(zk, n, t, Set("p")).await;
            t.step(
                "  ~/p's first watcher",
                heard(env, n, &mut pw, QUIET_MS).await,
            );
            // ~/q's only watcher dropped, then ~/q watched afresh.
            drop(qw);
            t.step("drop ~/q's watcher", "ok");
            write(zk, n, t, Create("q/gone")).await;
            let Ok(mut fresh) = zk.watch(&q, AddWatchMode::PersistentRecursive).await else {
                t.step("watch ~/q again", "failed");
                return;
            };
            t.step("watch ~/q again (recursive)", "ok");
            write(zk, n, t, Set("q/gone")).await;
            t.step(
                "  ~/q's new watcher",
                heard(env, n, &mut fresh, QUIET_MS).await,
            );
        }

        /// A persistent and a recursive watch while a request is lost and
        /// another session writes under them; after the reconnect.
        async fn persistent_loss(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let mut states = zk.state_watcher();
            let r = &n.root;
            let (p, q, lost) = (format!("{r}/p"), format!("{r}/q"), format!("{r}/lost"));
            for path in [&p, &q] {
                t.step(
                    &format!("create {}", n.rel(path)),
                    n.created(zk.create(path, b"", &persistent()).await),
                );
            }
            let watched = (
                zk.watch(&p, AddWatchMode::Persistent).await,
                zk.watch(&q, AddWatchMode::PersistentRecursive).await,
            );
            let (Ok(mut pw), Ok(mut qw)) = watched else {
                t.step("watch ~/p and ~/q", "failed");
                return;
            };
            t.step("watch ~/p (persistent) and ~/q (recursive)", "ok");
            env.arm_request_loss().await;
            t.step(
                "create ~/lost, the request lost",
                n.created(zk.create(&lost, b"", &persistent()).await),
            );
            let state = env.within(STATE_MS, states.changed()).await;
            t.step("state watcher", format!("{state:?}"));
            let other = env.other();
            let set = other.set_data(&p, b"meanwhile", None).await;
            t.step("other session, meanwhile: set_data ~/p", n.stat_result(set));
            let created = other.create(&format!("{q}/x"), b"", &persistent()).await;
            t.step("other session, meanwhile: create ~/q/x", n.created(created));
            let made = other.create(&format!("{p}/y"), b"", &persistent()).await;
            t.step("other session, meanwhile: create ~/p/y", n.created(made));
            env.heal().await;
            let state = env.within(STATE_MS, states.changed()).await;
            t.step("state watcher", format!("{state:?}"));
            t.step("~/p's watcher", heard(env, n, &mut pw, FIRE_MS).await);
            t.step("~/q's watcher", heard(env, n, &mut qw, FIRE_MS).await);
            t.step(
                "set_data ~/p",
                n.stat_result(zk.set_data(&p, b"after", None).await),
            );
            t.step("  ~/p's watcher", heard(env, n, &mut pw, QUIET_MS).await);
            let created = zk.create(&format!("{q}/x/z"), b"", &persistent()).await;
            t.step("create ~/q/x/z", n.created(created));
            t.step("  ~/q's watcher", heard(env, n, &mut qw, QUIET_MS).await);
        }

        /// Persistent watches of a session that expires, and another
        /// session's recursive watch over its ephemeral.
        async fn persistent_expiry(env: &Env, zk: Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let (p, q) = (format!("{r}/p"), format!("{r}/q"));
            let other = env.other();
            let Ok(mut ow) = other.watch(r, AddWatchMode::PersistentRecursive).await else {
                t.step("other session: watch ~ (recursive)", "failed");
                return;
            };
            t.step("other session: watch ~ (recursive)", "ok");
            for path in [&p, &q] {
                t.step(
                    &format!("create {}", n.rel(path)),
                    n.created(zk.create(path, b"", &persistent()).await),
                );
            }
            let watched = (
                zk.watch(&p, AddWatchMode::Persistent).await,
                zk.watch(&q, AddWatchMode::PersistentRecursive).await,
            );
            let (Ok(mut pw), Ok(mut qw)) = watched else {
                t.step("watch ~/p and ~/q", "failed");
                return;
            };
            t.step("watch ~/p (persistent) and ~/q (recursive)", "ok");
            let e = format!("{q}/e");
            t.step(
                "create ~/q/e (ephemeral)",
                n.created(zk.create(&e, b"", &mode(CreateMode::Ephemeral)).await),
            );
            let mut states = zk.state_watcher();
            env.expire(&zk).await;
            t.step("~/p's watcher", heard(env, n, &mut pw, STATE_MS).await);
            t.step("~/q's watcher", heard(env, n, &mut qw, STATE_MS).await);
            // The real crate may hand a watcher `Expired` before its own
            // state says so (seen once in CI under load): the client's state
            // is read once its state watcher has reached the end.
            while !states.state().is_terminated() {
                if env.within(STATE_MS, states.changed()).await.is_none() {
                    break;
                }
            }
            t.step("state()", format!("{:?}", zk.state()));
            t.step(
                "other session: the recursive watcher on ~",
                heard(env, n, &mut ow, FIRE_MS).await,
            );
            let set = other.set_data(&p, b"after", None).await;
            t.step("other session: set_data ~/p", n.stat_result(set));
            t.step(
                "  other session: the recursive watcher on ~",
                heard(env, n, &mut ow, FIRE_MS).await,
            );
            t.step(
                "watch ~/p on the expired session",
                match zk.watch(&p, AddWatchMode::Persistent).await {
                    Ok(_) => "ok".to_string(),
                    Err(e) => n.err(&e),
                },
            );
        }
    };
}

pub(crate) use define_persistent_sequences;
