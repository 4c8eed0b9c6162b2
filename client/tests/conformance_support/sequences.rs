//! The call sequences, written once against the `zookeeper-client` 0.11
//! API and expanded twice by [`define_sequences`]: for the real crate
//! (`upstream`) and for the simulated one (`zkcheck_zookeeper_client`).
//!
//! The expansion site provides an `Env` type with the same methods on both
//! sides: `connect_string()`, `root()`, `ttl_enabled()`, `within(ms, fut)`
//! (a timeout in the side's own time), `arm_reply_loss()` /
//! `arm_request_loss()` (the next request's reply / the request itself is
//! lost and the connection drops: on the real side by the fault proxy, in
//! the simulation by the run's fault schedule, see `sim_side`), `heal()`
//! (the network lets the client reconnect) and `expire(&client)` (the
//! server ends the session).
//!
//! Every step's outcome is one normalised line (see `Norm`): paths are
//! relative to the sequence's root (`~`), children sorted (both servers
//! keep them in a hash set: no order is promised), stats without absolute
//! zxids or times (zxids become labels `z1`, `z2`, ... in the order they
//! first appear in the transcript, so equal zxids and their order still
//! compare), ephemeral owners relative to the session, watch events
//! without their zxid's value (only whether they carry one).

/// Expands the sequences for one client crate (`upstream` or
/// `zkcheck_zookeeper_client`); `Env` must be in scope.
macro_rules! define_sequences {
    ($zk:ident) => {
        use crate::conformance_support::{Sequence, Transcript};
        use std::collections::BTreeMap;
        use std::sync::Mutex;
        use $zk::{
            Acls, CheckWriteError, Client, CreateMode, CreateOptions, CreateSequence, Error,
            MultiReadResult, MultiWriteError, MultiWriteResult, Stat, WatchedEvent,
        };

        /// How long a watch may take to fire before the step records
        /// that it did not (a notification precedes the reply of the
        /// change that triggers it, so this only bounds a failure).
        const FIRE_MS: u64 = 5_000;
        /// How long a step waits to show that a watch did NOT fire.
        const QUIET_MS: u64 = 300;
        /// How long a state change may take (a reconnect, an expiry).
        const STATE_MS: u64 = 20_000;

        /// Runs `sequence` and returns its transcript.
        pub async fn run(sequence: Sequence, env: &Env) -> Transcript {
            let mut t = Transcript::default();
            let zk = match Client::connect(env.connect_string()).await {
                Ok(zk) => zk,
                Err(error) => {
                    t.step("connect", format!("err {error:?}"));
                    return t;
                }
            };
            let n = Norm::new(env.root(), &zk, env.other());
            let root = env.root().to_string();
            t.step(
                "create root",
                n.created(zk.create(&root, b"", &persistent()).await),
            );
            match sequence {
                Sequence::CreateModes => create_modes(env, &zk, &n, &mut t).await,
                Sequence::SequentialNames => sequential_names(&zk, &n, &mut t).await,
                Sequence::Errors => errors(env, &zk, &n, &mut t).await,
                Sequence::DataVersions => data_versions(&zk, &n, &mut t).await,
                Sequence::CheckStat => check_stat(&zk, &n, &mut t).await,
                Sequence::Children => children(&zk, &n, &mut t).await,
                Sequence::Watches => watches(env, &zk, &n, &mut t).await,
                Sequence::Multi => multi(env, &zk, &n, &mut t).await,
                Sequence::MultiReader => multi_reader(&zk, &n, &mut t).await,
                Sequence::CheckWriter => check_writer(&zk, &n, &mut t).await,
                Sequence::Sync => sync(&zk, &n, &mut t).await,
                Sequence::Chroot => chroot(env, &zk, &n, &mut t).await,
                Sequence::LossAfterApply => connection_loss(env, &zk, &n, &mut t, true).await,
                Sequence::LossBeforeApply => connection_loss(env, &zk, &n, &mut t, false).await,
                Sequence::Expiry => expiry(env, zk, &n, &mut t).await,
                Sequence::Lock => lock_contention(env, &zk, &n, &mut t).await,
                Sequence::LockLossAfterApply => {
                    lock_connection_loss(env, &zk, &n, &mut t, true).await
                }
                Sequence::LockLossBeforeApply => {
                    lock_connection_loss(env, &zk, &n, &mut t, false).await
                }
                Sequence::LockExpiry => lock_expiry(env, zk, &n, &mut t).await,
                Sequence::LockCustomLoss => lock_custom_loss(env, &zk, &n, &mut t).await,
                Sequence::LockCancelledLoss => lock_cancelled_loss(env, &zk, &n, &mut t).await,
                Sequence::PersistentWatches => persistent_watches(env, &zk, &n, &mut t).await,
                Sequence::PersistentLoss => persistent_loss(env, &zk, &n, &mut t).await,
                Sequence::PersistentExpiry => persistent_expiry(env, zk, &n, &mut t).await,
                Sequence::MoreReads => more_reads(env, &zk, &n, &mut t).await,
                Sequence::MoreReadsLoss => more_reads_loss(env, &zk, &n, &mut t).await,
                Sequence::MoreReadsExpiry => more_reads_expiry(env, zk, &n, &mut t).await,
                Sequence::Acl => acl(env, &zk, &n, &mut t).await,
                Sequence::AclLoss => acl_loss(env, &zk, &n, &mut t).await,
                Sequence::AclExpiry => acl_expiry(env, zk, &n, &mut t).await,
                Sequence::IdleSilence => idle_silence(env, &zk, &n, &mut t).await,
            }
            t
        }

        fn persistent() -> CreateOptions<'static> {
            CreateMode::Persistent.with_acls(Acls::anyone_all())
        }

        fn mode(mode: CreateMode) -> CreateOptions<'static> {
            mode.with_acls(Acls::anyone_all())
        }

        /// Normalises outcomes (see the module doc).
        struct Norm {
            root: String,
            session: i64,
            /// The session of `Env::other()`, a second client.
            other_session: i64,
            zxids: Mutex<BTreeMap<i64, usize>>,
        }

        impl Norm {
            fn new(root: &str, zk: &Client, other: &Client) -> Norm {
                Norm {
                    root: root.to_string(),
                    session: zk.session_id().0,
                    other_session: other.session_id().0,
                    zxids: Mutex::new(BTreeMap::new()),
                }
            }

            /// `path` with the root written `~`.
            fn rel(&self, path: &str) -> String {
                match path.strip_prefix(&self.root) {
                    Some(rest) => format!("~{rest}"),
                    None => path.to_string(),
                }
            }

            /// A label for `zxid` (-1, an invalid stat's, stays itself).
            fn zxid(&self, zxid: i64) -> String {
                if zxid == -1 {
                    return "-1".to_string();
                }
                let mut zxids = self.zxids.lock().unwrap();
                let next = zxids.len() + 1;
                format!("z{}", zxids.entry(zxid).or_insert(next))
            }

            fn owner(&self, owner: i64) -> String {
                const TTL_MARK: i64 = 0xFF << 56;
                match owner {
                    0 => "none".to_string(),
                    i64::MIN => "container".to_string(),
                    _ if owner == self.session => "me".to_string(),
                    _ if owner == self.other_session => "the other session".to_string(),
                    _ if owner & TTL_MARK == TTL_MARK => {
                        format!("ttl:{}ms", owner & !TTL_MARK)
                    }
                    _ => "another session".to_string(),
                }
            }

            fn stat(&self, s: &Stat) -> String {
                format!(
                    "stat(czxid={} mzxid={} pzxid={} mtime{}ctime version={} cversion={} \
                     aversion={} owner={} data_length={} num_children={})",
                    self.zxid(s.czxid),
                    self.zxid(s.mzxid),
                    self.zxid(s.pzxid),
                    if s.mtime >= s.ctime { ">=" } else { "<" },
                    s.version,
                    s.cversion,
                    s.aversion,
                    self.owner(s.ephemeral_owner),
                    s.data_length,
                    s.num_children,
                )
            }

            fn err(&self, error: &Error) -> String {
                format!("err {error:?}")
            }

            fn created(&self, r: Result<(Stat, CreateSequence), Error>) -> String {
                match r {
                    Ok((stat, sequence)) => format!(
                        "ok sequence={sequence} ({}) {}",
                        sequence.into_i64(),
                        self.stat(&stat)
                    ),
                    Err(e) => self.err(&e),
                }
            }

            fn unit(&self, r: Result<(), Error>) -> String {
                match r {
                    Ok(()) => "ok".to_string(),
                    Err(e) => self.err(&e),
                }
            }

            fn stat_result(&self, r: Result<Stat, Error>) -> String {
                match r {
                    Ok(stat) => format!("ok {}", self.stat(&stat)),
                    Err(e) => self.err(&e),
                }
            }

            fn data(&self, r: Result<(Vec<u8>, Stat), Error>) -> String {
                match r {
                    Ok((data, stat)) => format!(
                        "ok data={:?} {}",
                        String::from_utf8_lossy(&data),
                        self.stat(&stat)
                    ),
                    Err(e) => self.err(&e),
                }
            }

            fn exists(&self, r: Result<Option<Stat>, Error>) -> String {
                match r {
                    Ok(Some(stat)) => format!("ok present {}", self.stat(&stat)),
                    Ok(None) => "ok absent".to_string(),
                    Err(e) => self.err(&e),
                }
            }

            fn names(&self, mut names: Vec<String>) -> String {
                names.sort();
                format!("[{}]", names.join(", "))
            }

            fn children(&self, r: Result<Vec<String>, Error>) -> String {
                match r {
                    Ok(names) => format!("ok {}", self.names(names)),
                    Err(e) => self.err(&e),
                }
            }

            fn children_stat(&self, r: Result<(Vec<String>, Stat), Error>) -> String {
                match r {
                    Ok((names, stat)) => {
                        format!("ok {} {}", self.names(names), self.stat(&stat))
                    }
                    Err(e) => self.err(&e),
                }
            }

            /// A watch event; its zxid only as "-1" (none) or "set".
            fn event(&self, event: &WatchedEvent) -> String {
                format!(
                    "{:?} {:?} path={:?} zxid={}",
                    event.event_type,
                    event.session_state,
                    self.rel(&event.path),
                    if event.zxid == WatchedEvent::NO_ZXID {
                        "-1"
                    } else {
                        "set"
                    }
                )
            }

            fn write_result(&self, result: &MultiWriteResult) -> String {
                match result {
                    MultiWriteResult::Check => "check".to_string(),
                    MultiWriteResult::Delete => "delete".to_string(),
                    MultiWriteResult::Create { path, stat } => {
                        format!("create {} {}", self.rel(path), self.stat(stat))
                    }
                    MultiWriteResult::SetData { stat } => format!("set_data {}", self.stat(stat)),
                    other => format!("{other:?}"),
                }
            }

            fn write_results(&self, results: &[MultiWriteResult]) -> String {
                let results: Vec<String> = results.iter().map(|r| self.write_result(r)).collect();
                format!("[{}]", results.join("; "))
            }

            fn multi(&self, r: Result<Vec<MultiWriteResult>, MultiWriteError>) -> String {
                match r {
                    Ok(results) => format!("ok {}", self.write_results(&results)),
                    Err(e) => format!("err {e:?}"),
                }
            }

            fn checked(&self, r: Result<Vec<MultiWriteResult>, CheckWriteError>) -> String {
                match r {
                    Ok(results) => format!("ok {}", self.write_results(&results)),
                    Err(e) => format!("err {e:?}"),
                }
            }

            fn count(&self, r: Result<usize, Error>) -> String {
                match r {
                    Ok(count) => format!("ok {count}"),
                    Err(e) => self.err(&e),
                }
            }

            /// Paths in sorted order (the server keeps a session's
            /// ephemerals in a hash set), the root written `~`.
            fn paths(&self, r: Result<Vec<String>, Error>) -> String {
                match r {
                    Ok(paths) => {
                        let mut paths: Vec<String> = paths.iter().map(|p| self.rel(p)).collect();
                        paths.sort();
                        format!("ok [{}]", paths.join(", "))
                    }
                    Err(e) => self.err(&e),
                }
            }

            fn read_results(&self, r: Result<Vec<MultiReadResult>, Error>) -> String {
                let results = match r {
                    Ok(results) => results,
                    Err(e) => return self.err(&e),
                };
                let results: Vec<String> = results
                    .into_iter()
                    .map(|result| match result {
                        MultiReadResult::Data { data, stat } => format!(
                            "data {:?} {}",
                            String::from_utf8_lossy(&data),
                            self.stat(&stat)
                        ),
                        MultiReadResult::Children { children } => {
                            format!("children {}", self.names(children))
                        }
                        MultiReadResult::Error { err } => self.err(&err),
                        other => format!("{other:?}"),
                    })
                    .collect();
                format!("ok [{}]", results.join("; "))
            }
        }

        /// A watch's future, polled across steps until it fires (once).
        struct Armed<F: std::future::Future<Output = WatchedEvent>> {
            future: Option<std::pin::Pin<Box<F>>>,
        }

        impl<F: std::future::Future<Output = WatchedEvent>> Armed<F> {
            fn new(future: F) -> Armed<F> {
                Armed {
                    future: Some(Box::pin(future)),
                }
            }

            /// Whether the watch fires within `ms` (or fired before).
            async fn fired(&mut self, env: &Env, n: &Norm, ms: u64) -> String {
                let Some(future) = self.future.as_mut() else {
                    return "fired already".to_string();
                };
                match env.within(ms, future).await {
                    Some(event) => {
                        self.future = None;
                        format!("fired {}", n.event(&event))
                    }
                    None => format!("no event within {ms} ms"),
                }
            }
        }

        /// Whether the watch fires within `ms`, and with what.
        async fn fired<F>(env: &Env, n: &Norm, watch: F, ms: u64) -> String
        where
            F: std::future::Future<Output = WatchedEvent>,
        {
            match env.within(ms, watch).await {
                Some(event) => format!("fired {}", n.event(&event)),
                None => format!("no event within {ms} ms"),
            }
        }

        async fn create_modes(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let root = env.root();
            let modes = [
                ("persistent", CreateMode::Persistent),
                ("persistent-sequential", CreateMode::PersistentSequential),
                ("ephemeral", CreateMode::Ephemeral),
                ("ephemeral-sequential", CreateMode::EphemeralSequential),
                ("container", CreateMode::Container),
            ];
            for (name, create_mode) in modes {
                let path = format!("{root}/{name}-");
                let created = zk.create(&path, name.as_bytes(), &mode(create_mode)).await;
                t.step(&format!("create {name}"), n.created(created));
            }
            if env.ttl_enabled() {
                let ttl = std::time::Duration::from_secs(3_600);
                let ttl_modes = [
                    ("persistent-ttl", CreateMode::Persistent),
                    (
                        "persistent-sequential-ttl",
                        CreateMode::PersistentSequential,
                    ),
                    ("ephemeral-ttl", CreateMode::Ephemeral),
                ];
                for (name, create_mode) in ttl_modes {
                    let path = format!("{root}/{name}-");
                    let options = mode(create_mode).with_ttl(ttl);
                    let created = zk.create(&path, b"ttl", &options).await;
                    t.step(&format!("create {name}"), n.created(created));
                }
            } else {
                println!("note: the server does not enable TTL nodes; the TTL steps are skipped");
            }
            t.step("list the root", n.children(zk.list_children(root).await));
            let names = zk.list_children(root).await.unwrap_or_default();
            let mut names = names;
            names.sort();
            for name in names {
                let path = format!("{root}/{name}");
                t.step(
                    &format!("get_data ~/{name}"),
                    n.data(zk.get_data(&path).await),
                );
            }
            t.step(
                "get_children of the root",
                n.children_stat(zk.get_children(root).await),
            );
        }

        async fn sequential_names(zk: &Client, n: &Norm, t: &mut Transcript) {
            let p = format!("{}/p", n.root);
            let seq = mode(CreateMode::PersistentSequential);
            let eseq = mode(CreateMode::EphemeralSequential);
            t.step(
                "create ~/p",
                n.created(zk.create(&p, b"", &persistent()).await),
            );
            t.step(
                "create ~/p/s-",
                n.created(zk.create(&format!("{p}/s-"), b"", &seq).await),
            );
            t.step(
                "create ~/p/plain",
                n.created(zk.create(&format!("{p}/plain"), b"", &persistent()).await),
            );
            t.step(
                "create ~/p/s-",
                n.created(zk.create(&format!("{p}/s-"), b"", &seq).await),
            );
            t.step(
                "create ~/p/e- (ephemeral)",
                n.created(zk.create(&format!("{p}/e-"), b"", &eseq).await),
            );
            t.step(
                "delete ~/p/s-0000000000",
                n.unit(zk.delete(&format!("{p}/s-0000000000"), None).await),
            );
            t.step(
                "create ~/p/s-",
                n.created(zk.create(&format!("{p}/s-"), b"", &seq).await),
            );
            t.step(
                "create ~/p/ (empty prefix)",
                n.created(zk.create(&format!("{p}/"), b"", &seq).await),
            );
            // The name the counter gives next (after this create bumped
            // it), taken first by a plain create: the sequential create
            // fails, and does not advance the counter.
            let taken = format!("{p}/s-0000000007");
            t.step(
                "create ~/p/s-0000000007",
                n.created(zk.create(&taken, b"", &persistent()).await),
            );
            for label in [
                "create ~/p/s- (its name taken)",
                "create ~/p/s- (still taken)",
            ] {
                t.step(
                    label,
                    n.created(zk.create(&format!("{p}/s-"), b"", &seq).await),
                );
            }
            t.step(
                "delete ~/p/s-0000000007",
                n.unit(zk.delete(&taken, None).await),
            );
            t.step(
                "create ~/p/s-",
                n.created(zk.create(&format!("{p}/s-"), b"", &seq).await),
            );
            t.step(
                "get_children ~/p",
                n.children_stat(zk.get_children(&p).await),
            );
            t.step(
                "create ~/q-",
                n.created(zk.create(&format!("{}/q-", n.root), b"", &seq).await),
            );
        }

        async fn errors(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let eph = mode(CreateMode::Ephemeral);
            t.step(
                "create ~/a",
                n.created(zk.create(&format!("{r}/a"), b"", &persistent()).await),
            );
            t.step(
                "create ~/a/child",
                n.created(zk.create(&format!("{r}/a/child"), b"", &persistent()).await),
            );
            t.step(
                "create ~/e (ephemeral)",
                n.created(zk.create(&format!("{r}/e"), b"", &eph).await),
            );
            t.step(
                "create ~/a again",
                n.created(zk.create(&format!("{r}/a"), b"", &persistent()).await),
            );
            t.step(
                "create ~/missing/x",
                n.created(
                    zk.create(&format!("{r}/missing/x"), b"", &persistent())
                        .await,
                ),
            );
            t.step(
                "create ~/missing/s- (sequential)",
                n.created(
                    zk.create(
                        &format!("{r}/missing/s-"),
                        b"",
                        &mode(CreateMode::PersistentSequential),
                    )
                    .await,
                ),
            );
            t.step(
                "get_data ~/missing",
                n.data(zk.get_data(&format!("{r}/missing")).await),
            );
            t.step(
                "set_data ~/missing",
                n.stat_result(zk.set_data(&format!("{r}/missing"), b"x", None).await),
            );
            t.step(
                "delete ~/missing",
                n.unit(zk.delete(&format!("{r}/missing"), None).await),
            );
            t.step(
                "delete ~/missing version 3",
                n.unit(zk.delete(&format!("{r}/missing"), Some(3)).await),
            );
            t.step(
                "list_children ~/missing",
                n.children(zk.list_children(&format!("{r}/missing")).await),
            );
            t.step(
                "get_children ~/missing",
                n.children_stat(zk.get_children(&format!("{r}/missing")).await),
            );
            t.step(
                "set_data ~/a version 7",
                n.stat_result(zk.set_data(&format!("{r}/a"), b"x", Some(7)).await),
            );
            t.step(
                "delete ~/a/child version 7",
                n.unit(zk.delete(&format!("{r}/a/child"), Some(7)).await),
            );
            t.step(
                "delete ~/a (not empty)",
                n.unit(zk.delete(&format!("{r}/a"), None).await),
            );
            t.step(
                "delete ~/a version 0 (not empty)",
                n.unit(zk.delete(&format!("{r}/a"), Some(0)).await),
            );
            t.step(
                "create ~/e/child",
                n.created(zk.create(&format!("{r}/e/child"), b"", &persistent()).await),
            );
            t.step(
                "create ~/e/s- (ephemeral sequential)",
                n.created(
                    zk.create(
                        &format!("{r}/e/s-"),
                        b"",
                        &mode(CreateMode::EphemeralSequential),
                    )
                    .await,
                ),
            );
            // Refused by the client before anything is sent.
            t.step(
                "create a relative path",
                n.created(zk.create("relative", b"", &persistent()).await),
            );
            t.step(
                "create a path ending in /",
                n.created(zk.create(&format!("{r}/a/"), b"", &persistent()).await),
            );
            t.step(
                "create /",
                n.created(zk.create("/", b"", &persistent()).await),
            );
            t.step("delete /", n.unit(zk.delete("/", None).await));
            t.step(
                "create with no ACL",
                n.created(
                    zk.create(
                        &format!("{r}/b"),
                        b"",
                        &CreateMode::Persistent.with_acls(Acls::new(&[])),
                    )
                    .await,
                ),
            );
            if env.ttl_enabled() {
                let ttl = std::time::Duration::from_secs(60);
                t.step(
                    "create an ephemeral with a TTL",
                    n.created(
                        zk.create(&format!("{r}/b"), b"", &eph.clone().with_ttl(ttl))
                            .await,
                    ),
                );
                t.step(
                    "create with a zero TTL",
                    n.created(
                        zk.create(
                            &format!("{r}/b"),
                            b"",
                            &persistent().with_ttl(std::time::Duration::ZERO),
                        )
                        .await,
                    ),
                );
            }
            t.step(
                "get_data ~/a/child",
                n.data(zk.get_data(&format!("{r}/a/child")).await),
            );
            t.step("list_children ~/", n.children(zk.list_children(r).await));
        }

        async fn data_versions(zk: &Client, n: &Norm, t: &mut Transcript) {
            let d = format!("{}/d", n.root);
            t.step(
                "create ~/d with data",
                n.created(zk.create(&d, b"one", &persistent()).await),
            );
            t.step("get_data ~/d", n.data(zk.get_data(&d).await));
            t.step(
                "set_data ~/d version 0",
                n.stat_result(zk.set_data(&d, b"two", Some(0)).await),
            );
            t.step(
                "set_data ~/d version 0 again",
                n.stat_result(zk.set_data(&d, b"three", Some(0)).await),
            );
            t.step("get_data ~/d", n.data(zk.get_data(&d).await));
            t.step(
                "set_data ~/d any version",
                n.stat_result(zk.set_data(&d, b"", None).await),
            );
            t.step("get_data ~/d (empty)", n.data(zk.get_data(&d).await));
            t.step(
                "set_data ~/d version 2",
                n.stat_result(zk.set_data(&d, b"four", Some(2)).await),
            );
            t.step(
                "set_data ~/d version -1",
                n.stat_result(zk.set_data(&d, b"five", Some(-1)).await),
            );
            t.step("delete ~/d version 1", n.unit(zk.delete(&d, Some(1)).await));
            t.step("get_data the root", n.data(zk.get_data(&n.root).await));
            t.step("delete ~/d version 4", n.unit(zk.delete(&d, Some(4)).await));
            t.step("get_data ~/d", n.data(zk.get_data(&d).await));
            t.step(
                "create ~/d again",
                n.created(zk.create(&d, b"again", &persistent()).await),
            );
            t.step("get_data ~/d", n.data(zk.get_data(&d).await));
        }

        async fn check_stat(zk: &Client, n: &Norm, t: &mut Transcript) {
            let c = format!("{}/c", n.root);
            t.step(
                "check_stat ~/c (missing)",
                n.exists(zk.check_stat(&c).await),
            );
            t.step(
                "create ~/c",
                n.created(zk.create(&c, b"abc", &persistent()).await),
            );
            t.step("check_stat ~/c", n.exists(zk.check_stat(&c).await));
            t.step(
                "set_data ~/c",
                n.stat_result(zk.set_data(&c, b"abcd", None).await),
            );
            t.step("check_stat ~/c", n.exists(zk.check_stat(&c).await));
            t.step(
                "create ~/c/e (ephemeral)",
                n.created(
                    zk.create(&format!("{c}/e"), b"", &mode(CreateMode::Ephemeral))
                        .await,
                ),
            );
            t.step(
                "check_stat ~/c/e",
                n.exists(zk.check_stat(&format!("{c}/e")).await),
            );
            t.step("check_stat ~/c", n.exists(zk.check_stat(&c).await));
            t.step(
                "delete ~/c/e",
                n.unit(zk.delete(&format!("{c}/e"), None).await),
            );
            t.step("check_stat ~/c", n.exists(zk.check_stat(&c).await));
            t.step("delete ~/c", n.unit(zk.delete(&c, None).await));
            t.step("check_stat ~/c", n.exists(zk.check_stat(&c).await));
            t.step(
                "check_stat the root",
                n.exists(zk.check_stat(&n.root).await),
            );
            t.step(
                "check_stat ~/missing/deeper",
                n.exists(zk.check_stat(&format!("{}/missing/deeper", n.root)).await),
            );
        }

        async fn children(zk: &Client, n: &Norm, t: &mut Transcript) {
            let p = format!("{}/p", n.root);
            t.step(
                "create ~/p",
                n.created(zk.create(&p, b"", &persistent()).await),
            );
            t.step(
                "list_children ~/p (none)",
                n.children(zk.list_children(&p).await),
            );
            for name in ["c", "a", "b", "zz", "m"] {
                let path = format!("{p}/{name}");
                t.step(
                    &format!("create ~/p/{name}"),
                    n.created(zk.create(&path, b"", &persistent()).await),
                );
            }
            t.step(
                "create ~/p/e (ephemeral)",
                n.created(
                    zk.create(&format!("{p}/e"), b"", &mode(CreateMode::Ephemeral))
                        .await,
                ),
            );
            t.step(
                "create ~/p/s- (sequential)",
                n.created(
                    zk.create(
                        &format!("{p}/s-"),
                        b"",
                        &mode(CreateMode::PersistentSequential),
                    )
                    .await,
                ),
            );
            t.step("list_children ~/p", n.children(zk.list_children(&p).await));
            t.step(
                "get_children ~/p",
                n.children_stat(zk.get_children(&p).await),
            );
            t.step(
                "delete ~/p/b",
                n.unit(zk.delete(&format!("{p}/b"), None).await),
            );
            t.step(
                "get_children ~/p",
                n.children_stat(zk.get_children(&p).await),
            );
            t.step(
                "list_children ~/p/a (a leaf)",
                n.children(zk.list_children(&format!("{p}/a")).await),
            );
            t.step(
                "get_children ~/p/a (a leaf)",
                n.children_stat(zk.get_children(&format!("{p}/a")).await),
            );
            t.step(
                "list_children the root",
                n.children(zk.list_children(&n.root).await),
            );
        }

        async fn watches(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let (a, b, c, p, q) = (
                format!("{r}/a"),
                format!("{r}/b"),
                format!("{r}/c"),
                format!("{r}/p"),
                format!("{r}/q"),
            );
            for path in [&a, &b, &p, &q] {
                t.step(
                    &format!("create {}", n.rel(path)),
                    n.created(zk.create(path, b"", &persistent()).await),
                );
            }
            // Data watch, data changed.
            match zk.get_and_watch_data(&a).await {
                Ok((_, stat, watch)) => {
                    t.step("get_and_watch_data ~/a", format!("ok {}", n.stat(&stat)));
                    t.step(
                        "set_data ~/a",
                        n.stat_result(zk.set_data(&a, b"1", None).await),
                    );
                    t.step(
                        "the data watch on ~/a",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("get_and_watch_data ~/a", n.err(&e)),
            }
            // Two watchers from two calls on one node: both fire.
            let first = zk.get_and_watch_data(&a).await;
            let second = zk.check_and_watch_stat(&a).await;
            match (first, second) {
                (Ok((_, _, first)), Ok((_, second))) => {
                    t.step(
                        "set_data ~/a",
                        n.stat_result(zk.set_data(&a, b"2", None).await),
                    );
                    t.step(
                        "the first of two watches on ~/a",
                        fired(env, n, first.changed(), FIRE_MS).await,
                    );
                    t.step(
                        "the second of two watches on ~/a",
                        fired(env, n, second.changed(), FIRE_MS).await,
                    );
                }
                (first, second) => t.step(
                    "watch ~/a twice",
                    format!("{:?} {:?}", first.err(), second.err()),
                ),
            }
            // Data watch, node deleted.
            match zk.get_and_watch_data(&b).await {
                Ok((_, _, watch)) => {
                    t.step("delete ~/b", n.unit(zk.delete(&b, None).await));
                    t.step(
                        "the data watch on ~/b",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("get_and_watch_data ~/b", n.err(&e)),
            }
            // Exists watch on a missing node: created; then changed, deleted.
            match zk.check_and_watch_stat(&c).await {
                Ok((stat, watch)) => {
                    t.step("check_and_watch_stat ~/c", n.exists(Ok(stat)));
                    t.step(
                        "create ~/c",
                        n.created(zk.create(&c, b"", &persistent()).await),
                    );
                    t.step(
                        "the exists watch on ~/c",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("check_and_watch_stat ~/c", n.err(&e)),
            }
            match zk.check_and_watch_stat(&c).await {
                Ok((stat, watch)) => {
                    t.step("check_and_watch_stat ~/c", n.exists(Ok(stat)));
                    t.step(
                        "set_data ~/c",
                        n.stat_result(zk.set_data(&c, b"1", None).await),
                    );
                    t.step(
                        "the exists watch on ~/c",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("check_and_watch_stat ~/c", n.err(&e)),
            }
            match zk.check_and_watch_stat(&c).await {
                Ok((_, watch)) => {
                    t.step("delete ~/c", n.unit(zk.delete(&c, None).await));
                    t.step(
                        "the exists watch on ~/c",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("check_and_watch_stat ~/c", n.err(&e)),
            }
            // Child watch: a child created; not the parent's data; a child deleted.
            match zk.list_and_watch_children(&p).await {
                Ok((names, watch)) => {
                    t.step(
                        "list_and_watch_children ~/p",
                        format!("ok {}", n.names(names)),
                    );
                    t.step(
                        "create ~/p/x",
                        n.created(zk.create(&format!("{p}/x"), b"", &persistent()).await),
                    );
                    t.step(
                        "the child watch on ~/p",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("list_and_watch_children ~/p", n.err(&e)),
            }
            match zk.get_and_watch_children(&p).await {
                Ok((names, stat, watch)) => {
                    t.step(
                        "get_and_watch_children ~/p",
                        format!("ok {} {}", n.names(names), n.stat(&stat)),
                    );
                    let mut watch = Armed::new(watch.changed());
                    t.step(
                        "set_data ~/p",
                        n.stat_result(zk.set_data(&p, b"1", None).await),
                    );
                    t.step(
                        "the child watch on ~/p",
                        watch.fired(env, n, QUIET_MS).await,
                    );
                    t.step(
                        "delete ~/p/x",
                        n.unit(zk.delete(&format!("{p}/x"), None).await),
                    );
                    t.step("the child watch on ~/p", watch.fired(env, n, FIRE_MS).await);
                }
                Err(e) => t.step("get_and_watch_children ~/p", n.err(&e)),
            }
            match zk.list_and_watch_children(&p).await {
                Ok((_, watch)) => {
                    t.step("delete ~/p", n.unit(zk.delete(&p, None).await));
                    t.step(
                        "the child watch on ~/p",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("list_and_watch_children ~/p", n.err(&e)),
            }
            // A data watch does not see a child created.
            match zk.get_and_watch_data(&q).await {
                Ok((_, _, watch)) => {
                    let mut watch = Armed::new(watch.changed());
                    t.step(
                        "create ~/q/x",
                        n.created(zk.create(&format!("{q}/x"), b"", &persistent()).await),
                    );
                    t.step("the data watch on ~/q", watch.fired(env, n, QUIET_MS).await);
                    t.step(
                        "set_data ~/q",
                        n.stat_result(zk.set_data(&q, b"1", None).await),
                    );
                    t.step("the data watch on ~/q", watch.fired(env, n, FIRE_MS).await);
                }
                Err(e) => t.step("get_and_watch_data ~/q", n.err(&e)),
            }
            // Another session's changes.
            let other = env.other();
            let o = format!("{r}/o");
            match zk.check_and_watch_stat(&o).await {
                Ok((_, watch)) => {
                    let created = other.create(&o, b"", &mode(CreateMode::Ephemeral)).await;
                    t.step("other session: create ~/o (ephemeral)", n.created(created));
                    t.step(
                        "the exists watch on ~/o",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("check_and_watch_stat ~/o", n.err(&e)),
            }
            t.step("check_stat ~/o", n.exists(zk.check_stat(&o).await));
            match zk.get_and_watch_data(&o).await {
                Ok((_, _, watch)) => {
                    let set = other.set_data(&o, b"1", None).await;
                    t.step("other session: set_data ~/o", n.stat_result(set));
                    t.step(
                        "the data watch on ~/o",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("get_and_watch_data ~/o", n.err(&e)),
            }
            match zk.check_and_watch_stat(&o).await {
                Ok((_, watch)) => {
                    t.step(
                        "other session: delete ~/o",
                        n.unit(other.delete(&o, None).await),
                    );
                    t.step(
                        "the exists watch on ~/o",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("check_and_watch_stat ~/o", n.err(&e)),
            }
            // Watching reads of a missing node.
            let missing = format!("{r}/missing");
            t.step(
                "get_and_watch_data ~/missing",
                match zk.get_and_watch_data(&missing).await {
                    Ok((_, stat, _)) => format!("ok {}", n.stat(&stat)),
                    Err(e) => n.err(&e),
                },
            );
            t.step(
                "list_and_watch_children ~/missing",
                match zk.list_and_watch_children(&missing).await {
                    Ok((names, _)) => format!("ok {}", n.names(names)),
                    Err(e) => n.err(&e),
                },
            );
        }

        async fn multi(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let m = format!("{}/m", n.root);
            t.step(
                "create ~/m",
                n.created(zk.create(&m, b"", &persistent()).await),
            );
            t.step(
                "create ~/m/old",
                n.created(zk.create(&format!("{m}/old"), b"", &persistent()).await),
            );
            let mut writer = zk.new_multi_writer();
            t.step("commit nothing", n.multi(writer.commit().await));
            let mut writer = zk.new_multi_writer();
            let added = [
                writer.add_create(&format!("{m}/a"), b"a", &persistent()),
                writer.add_create(
                    &format!("{m}/s-"),
                    b"",
                    &mode(CreateMode::PersistentSequential),
                ),
                writer.add_create(&format!("{m}/e"), b"", &mode(CreateMode::Ephemeral)),
                writer.add_set_data(&m, b"m", Some(0)),
                writer.add_check_version(&m, 1),
                writer.add_delete(&format!("{m}/old"), Some(0)),
            ];
            t.step("add six operations", format!("{added:?}"));
            t.step("commit", n.multi(writer.commit().await));
            t.step(
                "get_children ~/m",
                n.children_stat(zk.get_children(&m).await),
            );
            for (index, label) in [(0, "first"), (2, "third"), (3, "last")] {
                let mut writer = zk.new_multi_writer();
                let failing = |writer: &mut $zk::MultiWriter<'_>, at: usize| {
                    if at == index {
                        let _ = writer.add_check_version(&m, 7);
                    }
                };
                failing(&mut writer, 0);
                let _ = writer.add_create(&format!("{m}/b"), b"", &persistent());
                failing(&mut writer, 1);
                let _ = writer.add_set_data(&format!("{m}/a"), b"changed", None);
                failing(&mut writer, 2);
                let _ = writer.add_delete(&format!("{m}/a"), None);
                failing(&mut writer, 3);
                t.step(
                    &format!("commit, the {label} failing"),
                    n.multi(writer.commit().await),
                );
                t.step(
                    "check_stat ~/m/b",
                    n.exists(zk.check_stat(&format!("{m}/b")).await),
                );
                t.step(
                    "get_data ~/m/a",
                    n.data(zk.get_data(&format!("{m}/a")).await),
                );
            }
            let mut writer = zk.new_multi_writer();
            let _ = writer.add_create(&format!("{m}/a"), b"", &persistent());
            let _ = writer.add_delete(&format!("{m}/missing"), None);
            t.step(
                "commit: create existing, delete missing",
                n.multi(writer.commit().await),
            );
            let mut writer = zk.new_multi_writer();
            t.step(
                "add_create with a relative path",
                format!("{:?}", writer.add_create("relative", b"", &persistent())),
            );
            let _ = writer.add_create(&format!("{m}/c"), b"", &persistent());
            writer.abort();
            t.step("commit after abort", n.multi(writer.commit().await));
            t.step(
                "check_stat ~/m/c",
                n.exists(zk.check_stat(&format!("{m}/c")).await),
            );
            match zk.get_and_watch_data(&format!("{m}/a")).await {
                Ok((_, _, watch)) => {
                    let mut writer = zk.new_multi_writer();
                    let _ = writer.add_set_data(&format!("{m}/a"), b"by multi", None);
                    t.step("commit set_data ~/m/a", n.multi(writer.commit().await));
                    t.step(
                        "the data watch on ~/m/a",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("get_and_watch_data ~/m/a", n.err(&e)),
            }
        }

        async fn multi_reader(zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            t.step(
                "create ~/a",
                n.created(zk.create(&format!("{r}/a"), b"data", &persistent()).await),
            );
            t.step(
                "create ~/a/x",
                n.created(zk.create(&format!("{r}/a/x"), b"", &persistent()).await),
            );
            let mut reader = zk.new_multi_reader();
            let added = [
                reader.add_get_data(&format!("{r}/a")),
                reader.add_get_children(&format!("{r}/a")),
                reader.add_get_data(&format!("{r}/missing")),
                reader.add_get_children(r),
            ];
            t.step("add four reads", format!("{added:?}"));
            t.step("commit", n.read_results(reader.commit().await));
        }

        async fn check_writer(zk: &Client, n: &Norm, t: &mut Transcript) {
            let g = format!("{}/g", n.root);
            t.step(
                "create ~/g",
                n.created(zk.create(&g, b"", &persistent()).await),
            );
            let cases: [(&str, String, Option<i32>, bool); 5] = [
                ("version 0", g.clone(), Some(0), false),
                ("any version", g.clone(), None, false),
                ("version 5", g.clone(), Some(5), false),
                (
                    "a missing path",
                    format!("{}/missing", n.root),
                    Some(0),
                    false,
                ),
                ("version 0, an operation failing", g.clone(), Some(0), true),
            ];
            for (index, (label, path, version, fail)) in cases.into_iter().enumerate() {
                let mut writer = match zk.new_check_writer(&path, version) {
                    Ok(writer) => writer,
                    Err(e) => {
                        t.step(&format!("new_check_writer, {label}"), n.err(&e));
                        continue;
                    }
                };
                let _ = writer.add_create(&format!("{g}/c{index}"), b"", &persistent());
                if fail {
                    let _ = writer.add_delete(&format!("{g}/missing"), None);
                }
                t.step(
                    &format!("check, {label}: commit"),
                    n.checked(writer.commit().await),
                );
                t.step(
                    "get_children ~/g",
                    n.children_stat(zk.get_children(&g).await),
                );
            }
            t.step(
                "new_check_writer on a relative path",
                match zk.new_check_writer("relative", None) {
                    Ok(_) => "ok".to_string(),
                    Err(e) => n.err(&e),
                },
            );
        }

        async fn sync(zk: &Client, n: &Norm, t: &mut Transcript) {
            let s = format!("{}/s", n.root);
            t.step("sync the root", n.unit(zk.sync(&n.root).await));
            t.step(
                "create ~/s",
                n.created(zk.create(&s, b"", &persistent()).await),
            );
            t.step("sync ~/s", n.unit(zk.sync(&s).await));
            t.step("get_data ~/s", n.data(zk.get_data(&s).await));
            t.step(
                "sync ~/missing",
                n.unit(zk.sync(&format!("{}/missing", n.root)).await),
            );
            t.step("sync a relative path", n.unit(zk.sync("relative").await));
        }

        async fn chroot(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let app = format!("{}/app", n.root);
            t.step(
                "create ~/app",
                n.created(zk.create(&app, b"", &persistent()).await),
            );
            t.step(
                "chroot to a relative path",
                match zk.clone().chroot("relative") {
                    Ok(_) => "accepted".to_string(),
                    Err(_) => "refused".to_string(),
                },
            );
            let chrooted = match zk.clone().chroot(app.clone()) {
                Ok(chrooted) => chrooted,
                Err(_) => {
                    t.step("chroot to ~/app", "refused");
                    return;
                }
            };
            t.step("chroot to ~/app: path()", n.rel(chrooted.path()));
            t.step(
                "chrooted: create /x",
                n.created(chrooted.create("/x", b"x", &persistent()).await),
            );
            t.step(
                "chrooted: create /s- (sequential)",
                n.created(
                    chrooted
                        .create("/s-", b"", &mode(CreateMode::PersistentSequential))
                        .await,
                ),
            );
            t.step(
                "chrooted: get_data /x",
                n.data(chrooted.get_data("/x").await),
            );
            t.step(
                "chrooted: list_children /",
                n.children(chrooted.list_children("/").await),
            );
            t.step(
                "chrooted: check_stat /",
                n.exists(chrooted.check_stat("/").await),
            );
            t.step(
                "chrooted: get_data ~/app's path (not under the chroot)",
                n.data(chrooted.get_data(&app).await),
            );
            t.step(
                "unchrooted: list_children ~/app",
                n.children(zk.list_children(&app).await),
            );
            match chrooted.get_and_watch_data("/x").await {
                Ok((_, _, watch)) => {
                    t.step(
                        "unchrooted: set_data ~/app/x",
                        n.stat_result(zk.set_data(&format!("{app}/x"), b"y", None).await),
                    );
                    t.step(
                        "chrooted: the data watch on /x",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("chrooted: get_and_watch_data /x", n.err(&e)),
            }
            match chrooted.list_and_watch_children("/").await {
                Ok((_, watch)) => {
                    t.step(
                        "unchrooted: create ~/app/y",
                        n.created(zk.create(&format!("{app}/y"), b"", &persistent()).await),
                    );
                    t.step(
                        "chrooted: the child watch on /",
                        fired(env, n, watch.changed(), FIRE_MS).await,
                    );
                }
                Err(e) => t.step("chrooted: list_and_watch_children /", n.err(&e)),
            }
            let mut writer = chrooted.new_multi_writer();
            let _ = writer.add_create("/m", b"", &persistent());
            let _ = writer.add_create("/q-", b"", &mode(CreateMode::PersistentSequential));
            let _ = writer.add_set_data("/x", b"z", None);
            t.step(
                "chrooted: multi create /m, /q-, set_data /x",
                n.multi(writer.commit().await),
            );
            let nested = chrooted.clone().chroot("/x");
            t.step(
                "chrooted again to /x: path()",
                match &nested {
                    Ok(nested) => n.rel(nested.path()),
                    Err(_) => "refused".to_string(),
                },
            );
            if let Ok(nested) = nested {
                t.step(
                    "chrooted twice: check_stat /",
                    n.exists(nested.check_stat("/").await),
                );
            }
            t.step(
                "unchrooted: list_children ~/app",
                n.children(zk.list_children(&app).await),
            );
        }

        /// A request in flight when the connection drops; the watch armed
        /// before it survives the reconnect.
        async fn connection_loss(
            env: &Env,
            zk: &Client,
            n: &Norm,
            t: &mut Transcript,
            applied: bool,
        ) {
            let mut states = zk.state_watcher();
            t.step("state", format!("{:?}", states.state()));
            let other = env.other();
            let (w, v, lost) = (
                format!("{}/w", n.root),
                format!("{}/v", n.root),
                format!("{}/lost", n.root),
            );
            t.step(
                "create ~/w",
                n.created(zk.create(&w, b"", &persistent()).await),
            );
            t.step(
                "create ~/v",
                n.created(zk.create(&v, b"", &persistent()).await),
            );
            let (Ok((_, _, quiet)), Ok((_, _, changed))) = (
                zk.get_and_watch_data(&w).await,
                zk.get_and_watch_data(&v).await,
            ) else {
                t.step("get_and_watch_data ~/w and ~/v", "failed");
                return;
            };
            t.step("get_and_watch_data ~/w and ~/v", "ok");
            let mut quiet = Armed::new(quiet.changed());
            let mut changed = Armed::new(changed.changed());
            let label = if applied {
                env.arm_reply_loss().await;
                "create ~/lost, its reply lost"
            } else {
                env.arm_request_loss().await;
                "create ~/lost, the request lost"
            };
            t.step(label, n.created(zk.create(&lost, b"", &persistent()).await));
            let state = env.within(STATE_MS, states.changed()).await;
            t.step("state watcher", format!("{state:?}"));
            // A request sent while disconnected: its reply, if any, now
            // and after the reconnect.
            let mut during = Some(Box::pin(zk.check_stat(&w)));
            let reply_during = |result: Option<Result<Option<Stat>, Error>>| match result {
                Some(result) => n.exists(result),
                None => "no reply yet".to_string(),
            };
            let now = env
                .within(QUIET_MS, during.as_mut().expect("pending"))
                .await;
            if now.is_some() {
                during = None;
            }
            t.step("a request while disconnected", reply_during(now));
            let set = other.set_data(&v, b"meanwhile", None).await;
            t.step("other session, meanwhile: set_data ~/v", n.stat_result(set));
            t.step(
                "the watch on ~/v, still disconnected",
                changed.fired(env, n, QUIET_MS).await,
            );
            env.heal().await;
            let state = env.within(STATE_MS, states.changed()).await;
            t.step("state watcher", format!("{state:?}"));
            t.step(
                "the watch on ~/v (changed meanwhile)",
                changed.fired(env, n, FIRE_MS).await,
            );
            if let Some(pending) = during {
                let reply = env.within(FIRE_MS, pending).await;
                t.step(
                    "the request sent while disconnected, at last",
                    reply_during(reply),
                );
            }
            t.step("check_stat ~/lost", n.exists(zk.check_stat(&lost).await));
            t.step("the watch on ~/w", quiet.fired(env, n, QUIET_MS).await);
            t.step(
                "set_data ~/w",
                n.stat_result(zk.set_data(&w, b"after", None).await),
            );
            t.step("the watch on ~/w", quiet.fired(env, n, FIRE_MS).await);
            t.step(
                "create ~/lost",
                n.created(zk.create(&lost, b"", &persistent()).await),
            );
        }

        /// The tree the `more-reads` sequences read: ~/t with ~/t/a, ~/t/a/b,
        /// ~/t/c and the ephemeral ~/t/x, the ephemerals ~/e1 and ~/eph, and
        /// the other session's ephemeral ~/o.
        async fn more_reads_tree(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let nodes = [
                ("/t", false),
                ("/t/a", false),
                ("/t/a/b", false),
                ("/t/c", false),
                ("/t/x", true),
                ("/e1", true),
                ("/eph", true),
            ];
            for (rel, ephemeral) in nodes {
                let options = match ephemeral {
                    true => mode(CreateMode::Ephemeral),
                    false => persistent(),
                };
                let label = format!(
                    "create ~{rel}{}",
                    if ephemeral { " (ephemeral)" } else { "" }
                );
                t.step(
                    &label,
                    n.created(zk.create(&format!("{r}{rel}"), b"", &options).await),
                );
            }
            let created = env
                .other()
                .create(&format!("{r}/o"), b"", &mode(CreateMode::Ephemeral))
                .await;
            t.step("other session: create ~/o (ephemeral)", n.created(created));
        }

        /// count_descendants_number, list_ephemerals and a multi-read, each
        /// on nodes that exist and do not, and on paths that are no nodes.
        async fn more_reads(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            more_reads_tree(env, zk, n, t).await;
            let r = &n.root;
            for rel in ["", "/t", "/t/a/b", "/missing"] {
                let counted = zk.count_descendants_number(&format!("{r}{rel}")).await;
                t.step(
                    &format!("count_descendants_number ~{rel}"),
                    n.count(counted),
                );
            }
            for rel in ["", "/e", "/e1", "/t/x", "/missing", "/t/"] {
                let listed = zk.list_ephemerals(&format!("{r}{rel}")).await;
                t.step(&format!("list_ephemerals ~{rel}"), n.paths(listed));
            }
            t.step(
                "other session: list_ephemerals ~",
                n.paths(env.other().list_ephemerals(r).await),
            );
            t.step("multi-read", n.read_results(read_three(zk, r).await));
        }

        /// A multi-read whose reply is lost, then the three reads again
        /// on the same session once it has reconnected.
        async fn more_reads_loss(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            more_reads_tree(env, zk, n, t).await;
            let r = &n.root;
            env.arm_reply_loss().await;
            t.step(
                "multi-read, its reply lost",
                n.read_results(read_three(zk, r).await),
            );
            env.heal().await;
            t.step(
                "multi-read, reconnected",
                n.read_results(read_three(zk, r).await),
            );
            let counted = zk.count_descendants_number(&format!("{r}/t")).await;
            t.step(
                "count_descendants_number ~/t, reconnected",
                n.count(counted),
            );
            t.step(
                "list_ephemerals ~, reconnected",
                n.paths(zk.list_ephemerals(r).await),
            );
        }

        /// The three reads on an expired session, then on a new chrooted
        /// one (paths relative to its root).
        async fn more_reads_expiry(env: &Env, zk: Client, n: &Norm, t: &mut Transcript) {
            more_reads_tree(env, &zk, n, t).await;
            let r = &n.root;
            let mut states = zk.state_watcher();
            env.expire(&zk).await;
            while let Some(state) = env.within(STATE_MS, states.changed()).await {
                if state.is_terminated() {
                    break;
                }
            }
            let counted = zk.count_descendants_number(&format!("{r}/t")).await;
            t.step("count_descendants_number ~/t, expired", n.count(counted));
            t.step(
                "list_ephemerals ~, expired",
                n.paths(zk.list_ephemerals(r).await),
            );
            t.step(
                "multi-read, expired",
                n.read_results(read_three(&zk, r).await),
            );
            drop(zk);
            let Some(again) = connect_chrooted(env, r, t).await else {
                return;
            };
            t.step(
                "new session: count_descendants_number /",
                n.count(again.count_descendants_number("/").await),
            );
            t.step(
                "new session: list_ephemerals /",
                n.paths(again.list_ephemerals("/").await),
            );
            t.step(
                "new session: create /n (ephemeral)",
                n.created(again.create("/n", b"", &mode(CreateMode::Ephemeral)).await),
            );
            t.step(
                "new session: list_ephemerals /",
                n.paths(again.list_ephemerals("/").await),
            );
            t.step(
                "other session: list_ephemerals ~",
                n.paths(env.other().list_ephemerals(r).await),
            );
        }

        /// A new session with the root as its chroot (a connect string's
        /// `/path` suffix); a failure to connect is the transcript's step.
        async fn connect_chrooted(env: &Env, r: &str, t: &mut Transcript) -> Option<Client> {
            let chrooted = format!("{}{r}", env.connect_string());
            match Client::connect(&chrooted).await {
                Ok(again) => Some(again),
                Err(error) => {
                    t.step("connect again", format!("err {error:?}"));
                    None
                }
            }
        }

        /// A multi-read of ~/t's data and children and ~/missing's children.
        async fn read_three(zk: &Client, r: &str) -> Result<Vec<MultiReadResult>, Error> {
            let mut reader = zk.new_multi_reader();
            let added = [
                reader.add_get_data(&format!("{r}/t")),
                reader.add_get_children(&format!("{r}/t")),
                reader.add_get_children(&format!("{r}/missing")),
            ];
            assert!(added.iter().all(Result::is_ok), "{added:?}");
            reader.commit().await
        }

        /// The session expires under a client with an ephemeral and
        /// pending watches.
        async fn expiry(env: &Env, zk: Client, n: &Norm, t: &mut Transcript) {
            let mut states = zk.state_watcher();
            let r = &n.root;
            let (e, p, missing) = (format!("{r}/e"), format!("{r}/p"), format!("{r}/missing"));
            t.step(
                "create ~/e (ephemeral)",
                n.created(zk.create(&e, b"", &mode(CreateMode::Ephemeral)).await),
            );
            t.step(
                "create ~/p",
                n.created(zk.create(&p, b"", &persistent()).await),
            );
            let data_watch = zk.get_and_watch_data(&p).await;
            let exists_watch = zk.check_and_watch_stat(&missing).await;
            let child_watch = zk.list_and_watch_children(&p).await;
            let (Ok((_, _, data_watch)), Ok((_, exists_watch)), Ok((_, child_watch))) =
                (data_watch, exists_watch, child_watch)
            else {
                t.step("arm three watches", "failed");
                return;
            };
            t.step("arm three watches", "ok");
            let other = env.other();
            let others_watch = match other.check_and_watch_stat(&e).await {
                Ok((stat, watch)) => {
                    t.step(
                        "other session: check_and_watch_stat ~/e",
                        n.exists(Ok(stat)),
                    );
                    Some(watch)
                }
                Err(error) => {
                    t.step("other session: check_and_watch_stat ~/e", n.err(&error));
                    None
                }
            };
            env.expire(&zk).await;
            // The real crate's state watcher keeps only the latest state
            // (a watch channel): Disconnected may be passed over, so only
            // the terminal state is compared.
            let mut last = None;
            while let Some(state) = env.within(STATE_MS, states.changed()).await {
                last = Some(state);
                if state.is_terminated() {
                    break;
                }
            }
            t.step("state watcher ends in", format!("{last:?}"));
            t.step("state()", format!("{:?}", zk.state()));
            t.step(
                "the data watch on ~/p",
                fired(env, n, data_watch.changed(), FIRE_MS).await,
            );
            t.step(
                "the exists watch on ~/missing",
                fired(env, n, exists_watch.changed(), FIRE_MS).await,
            );
            t.step(
                "the child watch on ~/p",
                fired(env, n, child_watch.changed(), FIRE_MS).await,
            );
            if let Some(watch) = others_watch {
                t.step(
                    "other session: the exists watch on ~/e",
                    fired(env, n, watch.changed(), FIRE_MS).await,
                );
            }
            t.step(
                "other session: check_stat ~/e",
                n.exists(other.check_stat(&e).await),
            );
            t.step("check_stat ~/p", n.exists(zk.check_stat(&p).await));
            t.step(
                "create ~/x",
                n.created(zk.create(&format!("{r}/x"), b"", &persistent()).await),
            );
            t.step(
                "get_and_watch_data ~/p",
                match zk.get_and_watch_data(&p).await {
                    Ok(_) => "ok".to_string(),
                    Err(e) => n.err(&e),
                },
            );
            let expired_id = zk.session_id();
            drop(zk);
            let Some(again) = connect_chrooted(env, r, t).await else {
                return;
            };
            t.step(
                "connect again: a new session",
                format!("{}", again.session_id() != expired_id),
            );
            t.step("new session: path()", n.rel(again.path()));
            t.step(
                "new session: check_stat /e",
                n.exists(again.check_stat("/e").await),
            );
            t.step(
                "new session: list_children /",
                n.children(again.list_children("/").await),
            );
            t.step(
                "new session: create /e (ephemeral)",
                n.created(again.create("/e", b"", &mode(CreateMode::Ephemeral)).await),
            );
            t.step(
                "other session: check_stat ~/e",
                n.exists(other.check_stat(&e).await),
            );
            t.step("new session: state()", format!("{:?}", again.state()));
        }
    };
}

pub(crate) use define_sequences;
