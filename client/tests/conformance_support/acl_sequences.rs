//! The access-control sequences (`auth`, ACLs on create, `get_acl`,
//! `set_acl`, `list_auth_users`, `get_config`), written once like
//! [`super::sequences`] and expanded at the same sites (they use its
//! `Norm`, `Env` and helpers): a session that authenticates with a digest
//! protects its nodes; the second session (no identity but its address)
//! is refused or let through as each ACL says; then an addAuth whose
//! request is lost (sent again, not failed) and the identity across an
//! expiry (a new session a connector authenticates has it at once).

/// Expands the access-control sequences for one client crate;
/// `define_sequences!` must be expanded in the same module.
macro_rules! define_acl_sequences {
    ($zk:ident) => {
        use $zk::{Acl, AuthId, AuthUser, Permission};

        /// An ACL list as `PERMS scheme:id` entries (digest hashes shown:
        /// the simulated server computes them as the real one must).
        fn acl_text(acl: &[Acl]) -> String {
            let entries: Vec<String> = acl
                .iter()
                .map(|a| format!("{} {}:{}", a.permission(), a.scheme(), a.id()))
                .collect();
            format!("[{}]", entries.join(", "))
        }

        fn acl_result(n: &Norm, r: Result<(Vec<Acl>, Stat), Error>) -> String {
            match r {
                Ok((acl, stat)) => format!("ok {} {}", acl_text(&acl), n.stat(&stat)),
                Err(e) => n.err(&e),
            }
        }

        fn users(r: Result<Vec<AuthUser>, Error>) -> String {
            match r {
                Ok(users) => {
                    let users: Vec<String> = users
                        .iter()
                        .map(|u| format!("{}:{}", u.scheme(), u.user()))
                        .collect();
                    format!("ok [{}]", users.join(", "))
                }
                Err(e) => format!("err {e:?}"),
            }
        }

        fn with(acl: &[Acl], mode: CreateMode) -> CreateOptions<'_> {
            mode.with_acls(Acls::new(acl))
        }

        /// A digest session's nodes against a session without it.
        async fn acl(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let other = env.other();
            let (c, k) = (format!("{r}/c"), format!("{r}/c/k"));
            t.step("list_auth_users", users(zk.list_auth_users().await));
            t.step(
                "auth digest alice",
                n.unit(zk.auth("digest", b"alice:secret").await),
            );
            t.step(
                "list_auth_users, authenticated",
                users(zk.list_auth_users().await),
            );
            let creator = CreateMode::Persistent.with_acls(Acls::creator_all());
            t.step(
                "create ~/c creator_all",
                n.created(zk.create(&c, b"d", &creator).await),
            );
            t.step(
                "create ~/c/k creator_all",
                n.created(zk.create(&k, b"", &creator).await),
            );
            t.step("get_acl ~/c", acl_result(n, zk.get_acl(&c).await));
            t.step("other: get_data ~/c", n.data(other.get_data(&c).await));
            t.step("other: exists ~/c", n.exists(other.check_stat(&c).await));
            t.step(
                "other: get_children ~/c",
                n.children(other.list_children(&c).await),
            );
            t.step("other: get_acl ~/c", acl_result(n, other.get_acl(&c).await));
            t.step(
                "other: set_data ~/c",
                n.stat_result(other.set_data(&c, b"x", None).await),
            );
            t.step(
                "other: create ~/c/o",
                n.created(other.create(&format!("{c}/o"), b"", &persistent()).await),
            );
            t.step("other: delete ~/c/k", n.unit(other.delete(&k, None).await));
            t.step(
                "other: count_descendants_number ~/c",
                n.count(other.count_descendants_number(&c).await),
            );
            let read_all = [
                Acl::new(Permission::READ, AuthId::anyone()),
                Acl::new(Permission::ALL, AuthId::authed()),
            ];
            t.step(
                "set_acl ~/c version 1",
                n.stat_result(zk.set_acl(&c, &read_all, Some(1)).await),
            );
            t.step(
                "set_acl ~/c version 0",
                n.stat_result(zk.set_acl(&c, &read_all, Some(0)).await),
            );
            t.step("get_acl ~/c, set", acl_result(n, zk.get_acl(&c).await));
            t.step(
                "other: get_data ~/c, readable",
                n.data(other.get_data(&c).await),
            );
            t.step(
                "other: get_acl ~/c, readable",
                acl_result(n, other.get_acl(&c).await),
            );
            t.step(
                "other: set_acl ~/c",
                n.stat_result(other.set_acl(&c, &read_all, None).await),
            );
            let bob = [Acl::new(Permission::ALL, AuthId::new("world", "bob"))];
            t.step(
                "create ~/w world:bob",
                n.created(
                    zk.create(&format!("{r}/w"), b"", &with(&bob, CreateMode::Persistent))
                        .await,
                ),
            );
            t.step(
                "other: create ~/o creator_all",
                n.created(other.create(&format!("{r}/o"), b"", &creator).await),
            );
            let local = [Acl::new(
                Permission::READ | Permission::WRITE,
                AuthId::new("ip", "127.0.0.1"),
            )];
            let ip = format!("{r}/ip");
            t.step(
                "create ~/ip ip:127.0.0.1",
                n.created(
                    zk.create(&ip, b"", &with(&local, CreateMode::Persistent))
                        .await,
                ),
            );
            t.step(
                "other: set_data ~/ip",
                n.stat_result(other.set_data(&ip, b"y", None).await),
            );
            t.step("other: delete ~/ip", n.unit(other.delete(&ip, None).await));
            t.step("get_config", n.data(zk.get_config().await));
            let watched = zk.get_and_watch_config().await;
            t.step(
                "get_and_watch_config",
                n.data(watched.map(|(data, stat, _watcher)| (data, stat))),
            );
            let open = [Acl::new(Permission::ALL, AuthId::anyone())];
            t.step(
                "set_acl ~/c anyone (for the clean-up)",
                n.stat_result(zk.set_acl(&c, &open, None).await),
            );
        }

        /// An addAuth whose request is lost with its connection is sent
        /// again after the reconnect (the future does not fail), and the
        /// session is authenticated from then on.
        async fn acl_loss(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let c = format!("{r}/c");
            env.arm_request_loss().await;
            let auth = zk.auth("digest", b"alice:secret");
            env.heal().await;
            t.step("auth digest alice, its request lost", n.unit(auth.await));
            let creator = CreateMode::Persistent.with_acls(Acls::creator_all());
            t.step(
                "create ~/c creator_all",
                n.created(zk.create(&c, b"d", &creator).await),
            );
            t.step("get_acl ~/c", acl_result(n, zk.get_acl(&c).await));
            t.step("get_data ~/c", n.data(zk.get_data(&c).await));
            t.step("list_auth_users", users(zk.list_auth_users().await));
            t.step(
                "other: get_data ~/c",
                n.data(env.other().get_data(&c).await),
            );
        }

        /// The identity goes with its session; a new session a connector
        /// authenticates has it from its first request, the other session
        /// never.
        async fn acl_expiry(env: &Env, zk: Client, n: &Norm, t: &mut Transcript) {
            let r = &n.root;
            let c = format!("{r}/c");
            t.step(
                "auth digest alice",
                n.unit(zk.auth("digest", b"alice:secret").await),
            );
            let creator = CreateMode::Persistent.with_acls(Acls::creator_all());
            t.step(
                "create ~/c creator_all",
                n.created(zk.create(&c, b"d", &creator).await),
            );
            let mut states = zk.state_watcher();
            env.expire(&zk).await;
            while let Some(state) = env.within(STATE_MS, states.changed()).await {
                if state.is_terminated() {
                    break;
                }
            }
            t.step("get_data ~/c, expired", n.data(zk.get_data(&c).await));
            drop(zk);
            let connector = Client::connector().with_auth("digest", b"alice:secret");
            let again = match connector.connect(env.connect_string()).await {
                Ok(again) => again,
                Err(error) => {
                    t.step("new session", format!("err {error:?}"));
                    return;
                }
            };
            t.step(
                "new session with_auth alice: get_data ~/c",
                n.data(again.get_data(&c).await),
            );
            t.step(
                "new session: list_auth_users",
                users(again.list_auth_users().await),
            );
            t.step(
                "other: get_data ~/c",
                n.data(env.other().get_data(&c).await),
            );
        }
    };
}

pub(crate) use define_acl_sequences;
