//! The `Client::lock` sequences, written once like [`super::sequences`]
//! and expanded at the same sites (they use its `Norm`, `Env` and helpers):
//! contention between two sessions, the guarded writes, the node deleted on
//! drop, RuntimeInconsistent once a node is deleted behind its owner, the
//! argument errors; then a lock whose create's reply (or request) is lost,
//! and a waiter whose session expires.
//!
//! Curator's node names carry a random UUID in the real crate and a drawn
//! one in the simulation: both are written `{uuid}` when they have the
//! version-4 shape (`Norm`'s other rules apply as usual).

/// Expands the lock sequences for one client crate; `define_sequences!`
/// must be expanded in the same module.
macro_rules! define_lock_sequences {
    ($zk:ident) => {
        use $zk::{LockClient, LockOptions, LockPrefix, SessionState};

        /// A Curator lock's `_c_{uuid}-` written `_c_{uuid}-` if the UUID
        /// has the version-4 shape (else left as it is).
        fn mask_uuid(name: &str) -> String {
            let Some(at) = name.find("_c_") else {
                return name.to_string();
            };
            let start = at + 3;
            let Some(uuid) = name.get(start..start + 36) else {
                return name.to_string();
            };
            let groups: Vec<&str> = uuid.split('-').collect();
            let v4 = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
                && uuid.chars().all(|c| c == '-' || matches!(c, '0'..='9' | 'a'..='f'))
                && groups[2].starts_with('4')
                && matches!(&groups[3][..1], "8" | "9" | "a" | "b");
            if !v4 {
                return name.to_string();
            }
            format!("{}{{uuid}}{}", &name[..start], &name[start + 36..])
        }

        impl Norm {
            /// A lock node's path, relative and with its UUID masked.
            fn lock_path(&self, path: &str) -> String {
                mask_uuid(&self.rel(path))
            }

            fn locked(&self, r: &Result<LockClient<'_>, Error>) -> String {
                match r {
                    Ok(lock) => format!("ok {}", self.lock_path(lock.lock_path())),
                    Err(e) => self.err(e),
                }
            }

            /// A lock that may still be waiting after a while.
            fn waited<'c>(&self, r: Option<Result<LockClient<'c>, Error>>) -> (String, Option<LockClient<'c>>) {
                match r {
                    None => ("still waiting".to_string(), None),
                    Some(r) => {
                        let line = self.locked(&r);
                        (line, r.ok())
                    }
                }
            }

            fn lock_children(&self, r: Result<Vec<String>, Error>) -> String {
                match r {
                    Ok(names) => {
                        let masked = names.iter().map(|name| mask_uuid(name)).collect();
                        format!("ok {}", self.names(masked))
                    }
                    Err(e) => self.err(&e),
                }
            }
        }

        fn lock_options() -> LockOptions<'static> {
            LockOptions::new(Acls::anyone_all())
                .with_ancestor_options(persistent())
                .expect("persistent ancestors")
        }

        fn curator(dir: &str) -> LockPrefix<'_> {
            LockPrefix::new_curator(dir, "lock-").expect("a valid prefix")
        }

        fn last_segment(path: &str) -> &str {
            path.rsplit('/').next().unwrap_or(path)
        }

        /// Arguments the lock refuses before sending anything, and the
        /// server's refusals.
        async fn lock_errors(zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let dir = format!("{r}/locks");
            t.step(
                "new_curator, a / in the name",
                format!("{:?}", LockPrefix::new_curator(&dir, "a/b").map(|_| ())),
            );
            t.step(
                "new_shared, a relative prefix",
                format!("{:?}", LockPrefix::new_shared("locks/n-").map(|_| ())),
            );
            t.step(
                "new_custom, the name not in the last segment",
                format!(
                    "{:?}",
                    LockPrefix::new_custom(format!("{dir}/x-"), "y-").map(|_| ())
                ),
            );
            t.step(
                "ancestor options, ephemeral",
                format!(
                    "{:?}",
                    LockOptions::new(Acls::anyone_all())
                        .with_ancestor_options(mode(CreateMode::Ephemeral))
                        .map(|_| ())
                ),
            );
            let empty = zk.lock(curator(&dir), b"", Acls::new(&[])).await;
            t.step("lock, no ACL", n.locked(&empty));
            let orphan = zk.lock(curator(&dir), b"", Acls::anyone_all()).await;
            t.step("lock, no parent and no ancestor options", n.locked(&orphan));
            let eph = format!("{r}/eph");
            t.step(
                "create ~/eph (ephemeral)",
                n.created(zk.create(&eph, b"", &mode(CreateMode::Ephemeral)).await),
            );
            let prefix = format!("{eph}/n-");
            let under = zk.lock(LockPrefix::new_shared(&prefix).expect("valid"), b"", lock_options());
            t.step("lock under an ephemeral", n.locked(&under.await));
        }

        /// Two sessions contend; guarded writes; the release hands over.
        async fn lock_contention(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            lock_errors(zk, n, t).await;
            let r = &n.root;
            let dir = format!("{r}/locks");
            let other = env.other();
            let mine = zk.lock(curator(&dir), b"zk", lock_options()).await;
            t.step("lock ~/locks", n.locked(&mine));
            let Ok(mine) = mine else { return };
            t.step("get_data of the lock node", n.data(zk.get_data(mine.lock_path()).await));
            let mut theirs = Box::pin(other.lock(curator(&dir), b"other", lock_options()));
            let (line, _) = n.waited(env.within(QUIET_MS, theirs.as_mut()).await);
            t.step("other session: lock ~/locks, while held", line);
            t.step("list_children ~/locks", n.lock_children(zk.list_children(&dir).await));
            let g = format!("{r}/g");
            t.step("guarded create ~/g", n.created(mine.create(&g, b"", &persistent()).await));
            t.step("guarded set_data ~/g", n.stat_result(mine.set_data(&g, b"1", None).await));
            t.step("guarded delete ~/g", n.unit(mine.delete(&g, None).await));
            let released = mine.lock_path().to_string();
            drop(mine);
            let (line, theirs) = n.waited(env.within(FIRE_MS, theirs).await);
            t.step("other session: lock ~/locks, after the release", line);
            t.step("the released node", n.exists(zk.check_stat(&released).await));
            t.step("list_children ~/locks", n.lock_children(zk.list_children(&dir).await));
            let Some(theirs) = theirs else { return };
            t.step(
                "delete the other session's lock node",
                n.unit(zk.delete(theirs.lock_path(), None).await),
            );
            t.step(
                "other session: guarded create ~/h",
                n.created(theirs.create(&format!("{r}/h"), b"", &persistent()).await),
            );
            t.step(
                "other session: guarded set_data ~",
                n.stat_result(theirs.set_data(r, b"x", None).await),
            );
            t.step(
                "other session: guarded delete ~/locks",
                n.unit(theirs.delete(&dir, None).await),
            );
            drop(theirs);
            lock_prefixes(env, zk, n, t).await;
        }

        /// Shared and custom prefixes; a waiter whose node is deleted.
        async fn lock_prefixes(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let shared = format!("{r}/shared/n-");
            let prefix = || LockPrefix::new_shared(&shared).expect("valid");
            let mine = zk.lock(prefix(), b"", lock_options()).await;
            t.step("lock shared ~/shared/n-", n.locked(&mine));
            let custom = LockPrefix::new_custom(format!("{r}/shared/x-me-"), "x-").expect("valid");
            let own = zk.lock(custom, b"", lock_options()).await;
            t.step("lock custom ~/shared/x-me- (name x-)", n.locked(&own));
            let owned = own.map(LockClient::into_owned);
            drop(owned);
            let mut theirs = Box::pin(env.other().lock(prefix(), b"", lock_options()));
            let (line, _) = n.waited(env.within(QUIET_MS, theirs.as_mut()).await);
            t.step("other session: lock shared, while held", line);
            let Ok(mine) = mine else { return };
            let dir = format!("{r}/shared");
            let children = zk.list_children(&dir).await.unwrap_or_default();
            for child in children.iter().filter(|c| c.starts_with("n-")) {
                if child != last_segment(mine.lock_path()) {
                    let path = format!("{dir}/{child}");
                    t.step("delete the waiter's node", n.unit(zk.delete(&path, None).await));
                }
            }
            drop(mine);
            let (line, _) = n.waited(env.within(FIRE_MS, theirs).await);
            t.step("other session: lock shared, its node deleted", line);
            // The drops' background deletes: give them a moment.
            let _ = env.within(QUIET_MS, std::future::pending::<()>()).await;
            t.step("list_children ~/shared", n.lock_children(zk.list_children(&dir).await));
        }

        /// A lock whose create's reply (or request) is lost: it finds its
        /// node (or creates it again) once reconnected.
        async fn lock_connection_loss(
            env: &Env,
            zk: &Client,
            n: &Norm,
            t: &mut Transcript,
            applied: bool,
        ) {
            let dir = format!("{}/locks", n.root);
            t.step("mkdir ~/locks", n.unit(zk.mkdir(&dir, &persistent()).await));
            if applied {
                env.arm_reply_loss().await;
            } else {
                env.arm_request_loss().await;
            }
            let mut lock = Box::pin(zk.lock(curator(&dir), b"zk", Acls::anyone_all()));
            let (line, _) = n.waited(env.within(QUIET_MS, lock.as_mut()).await);
            t.step("lock ~/locks, the connection lost", line);
            env.heal().await;
            let (line, lock) = n.waited(env.within(STATE_MS, lock).await);
            t.step("lock ~/locks, reconnected", line);
            t.step("list_children ~/locks", n.lock_children(zk.list_children(&dir).await));
            if let Some(lock) = lock {
                t.step("get_data of the lock node", n.data(zk.get_data(lock.lock_path()).await));
            }
        }

        /// A custom-prefix lock whose create's reply is lost: the real
        /// crate finds its node by ephemeral owner (a multi-read), then
        /// parses the node's full path against the bare prefix and fails;
        /// the failed contention's node is deleted in the background.
        async fn lock_custom_loss(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let dir = format!("{}/locks", n.root);
            t.step("mkdir ~/locks", n.unit(zk.mkdir(&dir, &persistent()).await));
            env.arm_reply_loss().await;
            let prefix = LockPrefix::new_custom(format!("{dir}/x-me-"), "x-").expect("valid");
            let mut lock = Box::pin(zk.lock(prefix, b"zk", Acls::anyone_all()));
            let (line, _) = n.waited(env.within(QUIET_MS, lock.as_mut()).await);
            t.step("custom lock ~/locks/x-me-, the connection lost", line);
            env.heal().await;
            let (line, _) = n.waited(env.within(STATE_MS, lock).await);
            // The error names the node's absolute path: relative here.
            let line = line.replace(&n.root, "~");
            t.step("custom lock ~/locks/x-me-, reconnected", line);
            let _ = env.within(QUIET_MS, std::future::pending::<()>()).await;
            t.step(
                "list_children ~/locks, a moment later",
                n.lock_children(zk.list_children(&dir).await),
            );
        }

        /// A Curator contention dropped while its create's reply is lost:
        /// the real crate's guard finds the node by its unique name, then
        /// deletes it by that bare name, which fails validation, so the
        /// node stays (until the session ends).
        async fn lock_cancelled_loss(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let dir = format!("{}/locks", n.root);
            t.step("mkdir ~/locks", n.unit(zk.mkdir(&dir, &persistent()).await));
            env.arm_reply_loss().await;
            let mut lock = Box::pin(zk.lock(curator(&dir), b"zk", Acls::anyone_all()));
            let (line, _) = n.waited(env.within(QUIET_MS, lock.as_mut()).await);
            t.step("lock ~/locks, the connection lost", line);
            drop(lock);
            env.heal().await;
            let mut states = zk.state_watcher();
            if zk.state() != SessionState::SyncConnected {
                let _ = env.within(STATE_MS, states.changed()).await;
            }
            // Long enough for the background delete to have run.
            let _ = env.within(FIRE_MS, std::future::pending::<()>()).await;
            let children = zk.list_children(&dir).await;
            t.step("list_children ~/locks, later", n.lock_children(children.clone()));
            for child in children.unwrap_or_default() {
                let node = zk.get_data(&format!("{dir}/{child}")).await;
                t.step("get_data of the node left", n.data(node));
            }
        }

        /// A waiter's session expires.
        async fn lock_expiry(env: &Env, zk: Client, n: &Norm, t: &mut Transcript) {
            let dir = format!("{}/locks", n.root);
            let other = env.other();
            let held = other.lock(curator(&dir), b"other", lock_options()).await;
            t.step("other session: lock ~/locks", n.locked(&held));
            let mut mine = Box::pin(zk.lock(curator(&dir), b"zk", lock_options()));
            let (line, _) = n.waited(env.within(QUIET_MS, mine.as_mut()).await);
            t.step("lock ~/locks, while held", line);
            t.step("list_children ~/locks", n.lock_children(zk.list_children(&dir).await));
            env.expire(&zk).await;
            let (line, _) = n.waited(env.within(STATE_MS, mine).await);
            t.step("lock ~/locks, the session expired", line);
            t.step(
                "other session: list_children ~/locks",
                n.lock_children(other.list_children(&dir).await),
            );
            if let Ok(held) = held {
                t.step(
                    "other session: guarded set_data ~/locks",
                    n.stat_result(held.set_data(&dir, b"held", None).await),
                );
            }
        }
    };
}

pub(crate) use define_lock_sequences;
