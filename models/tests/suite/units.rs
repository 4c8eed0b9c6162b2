//! Unit tests of zk-models' modules that need the whole library (moved out of
//! the library so that cargo does not compile it a second time in test mode:
//! `test = false` in models/Cargo.toml), one module per source file.

mod schedule {
    use std::path::Path;
    use zk_models::action::Action;
    use zk_models::registry::Registry;
    use zk_models::schedule::*;

    #[test]
    fn round_trips_through_toml() {
        let schedule = Schedule {
            recipe: "lock".into(),
            variant: "original".into(),
            clients: 2,
            cycles: 2,
            servers: 1,
            revalidate: true,
            faults: "none".into(),
            property: "mutual_exclusion".into(),
            expect: "violation".into(),
            cycle_start: None,
            initial: None,
            state: None,
            steps: vec![
                ScheduleStep {
                    call: Some("Lock".into()),
                    ..ScheduleStep::of(Action::Call(0))
                },
                ScheduleStep::of(Action::Send {
                    client: 1,
                    order: 2,
                }),
                ScheduleStep::of(Action::LoseRequest {
                    client: 1,
                    applied: true,
                }),
            ],
        };
        let text = schedule.to_toml();
        assert!(text.contains("[[step]]"), "{text}");
        assert!(text.contains("op = \"lose_reply\""), "{text}");
        assert_eq!(Schedule::from_toml(&text).unwrap(), schedule);
        assert_eq!(
            Schedule::parse(Path::new("s.toml"), &text, &Registry::builtin()).unwrap(),
            schedule
        );
    }

    #[test]
    fn an_initial_state_round_trips_and_older_files_have_none() {
        use zk_models::setup::{node_path, InitialNode, InitialState, Setup};
        use zk_recipes::zk::SessionId;
        let path = |text: &str| node_path(text).unwrap();
        let mut binary = InitialNode::persistent(path("/a"));
        binary.data = vec![0xff, 0];
        let mut text = InitialNode::container(path("/a/b"));
        text.data = b"hi".to_vec();
        let setup = Setup::new(2)
            .with_node(binary)
            .with_node(text)
            .with_sequence_start(path("/a"), i32::MAX)
            .with_first_session(SessionId(999));
        let older = Schedule {
            recipe: "lock".into(),
            variant: "original".into(),
            clients: 2,
            cycles: 1,
            servers: 1,
            revalidate: true,
            faults: "none".into(),
            property: "mutual_exclusion".into(),
            expect: "violation".into(),
            cycle_start: None,
            initial: None,
            state: None,
            steps: vec![ScheduleStep {
                call: Some("Lock".into()),
                ..ScheduleStep::of(Action::Call(0))
            }],
        };
        assert!(!older.to_toml().contains("initial"));
        assert_eq!(older.initial_state().unwrap(), InitialState::default());
        let schedule = older.with_initial_state(&setup.initial);
        let toml = schedule.to_toml();
        for line in [
            "[initial]\nfirst_session = 999\n",
            "[[initial.node]]\npath = \"/a\"\ndata = [255, 0]\n",
            "[[initial.node]]\npath = \"/a/b\"\nmode = \"container\"\ndata = \"hi\"\n",
            "[[initial.sequence_start]]\nparent = \"/a\"\nnext = 2147483647\n",
        ] {
            assert!(toml.contains(line), "{line:?} in\n{toml}");
        }
        let read = Schedule::parse(Path::new("s.toml"), &toml, &Registry::builtin()).unwrap();
        assert_eq!(read, schedule);
        assert_eq!(read.initial_state().unwrap(), setup.initial);
    }

    const SOURCE: &str = "recipe = \"lock\"\nclients = 2\n\n[[step]]\nclient = 0\nop = \"call\"\n\n[[step]]\nclient = 1\nop = \"send\"\n";

    #[test]
    fn errors_name_the_lines_of_step_keys() {
        let line = |key: &str| ScheduleError::at_key(Path::new("s.toml"), SOURCE, key, "m").line;
        assert_eq!(line("clients"), 2);
        assert_eq!(line("step[0].op"), 6);
        assert_eq!(line("step[1].client"), 9);
        assert_eq!(line("step[1].call"), 8);
        assert_eq!(line("step[1]"), 8);
        assert_eq!(line("step[7].op"), 0);
        let text = SOURCE.replace("client = 1", "client = 1\nbogus = 1");
        let error = Schedule::parse(Path::new("s.toml"), &text, &Registry::builtin()).unwrap_err();
        assert_eq!(
            (error.line, error.key.as_str()),
            (10, "step[1].bogus"),
            "{error}"
        );
        let long = "x".repeat(10_000);
        let shown =
            ScheduleError::at_key(Path::new("s.toml"), SOURCE, "recipe", format!("`{long}`"))
                .to_string();
        assert!(shown.len() < 200, "{shown}");
    }
}

mod reduction {
    use std::collections::HashSet;
    use zk_models::reduction::{invisible_step, take_successor};
    use zk_models::Setup;

    /// Every successor the look-ahead keeps is the one a step computes, is
    /// handed out once, and only for the state it was computed from; both
    /// outcomes of the look-ahead (a step taken alone, none) are met.
    #[test]
    fn kept_successors_are_the_steps_own() {
        let model = zk_models::lock::fixed(&Setup::new(3)).raw();
        let (mut alone, mut expanded) = (0, 0);
        let mut seen = HashSet::new();
        let mut pending = vec![model.initial()];
        let mut actions = Vec::new();
        while let Some(state) = pending.pop() {
            let fingerprint = zk_models::canonical::fingerprint(&state);
            if seen.len() >= 3_000 || !seen.insert(fingerprint) {
                continue;
            }
            let chosen = invisible_step(&model, &state);
            actions.clear();
            model.all_actions(&state, &mut actions);
            let mut kept = 0;
            for &action in &actions {
                let next = model.step(&state, action);
                if let Some(successor) = take_successor(&state, action) {
                    assert!(successor == next, "{action:?}");
                    assert!(take_successor(&state, action).is_none(), "handed out twice");
                    kept += 1;
                }
                pending.push(next);
            }
            match chosen {
                Some(_) => alone += usize::from(kept == 1),
                None => expanded += usize::from(kept > 0),
            }
        }
        assert!(alone > 100 && expanded > 100, "{alone} {expanded}");
    }

    #[test]
    fn a_kept_successor_is_not_handed_to_another_state() {
        let model = zk_models::lock::fixed(&Setup::new(2)).raw();
        let mut state = model.initial();
        while invisible_step(&model, &state).is_none() {
            let mut actions = Vec::new();
            model.all_actions(&state, &mut actions);
            state = model.step(&state, actions[0]);
        }
        let chosen = invisible_step(&model, &state).expect("found above");
        let other = model.step(&state, chosen);
        assert!(take_successor(&other, chosen).is_none());
        assert!(
            take_successor(&state, chosen).is_none(),
            "dropped for another state"
        );
    }
}

mod transition {
    use zk_models::action::Action;

    #[test]
    fn fault_kinds_match_actions() {
        assert_eq!(
            Action::Expire {
                client: 0,
                order: 0
            }
            .fault(),
            Some(zk_models::faults::FaultKind::Expiry)
        );
        assert!(Action::Deliver(0).is_progress());
    }
}

mod app {
    use zk_models::sequence_suffix;

    #[test]
    fn sequence_suffix_reads_the_last_ten_digits() {
        assert_eq!(sequence_suffix("x-257-0000000004"), Some(4));
        assert_eq!(sequence_suffix("lock-0000000012"), Some(12));
        assert_eq!(sequence_suffix("0000000000"), Some(0));
        assert_eq!(sequence_suffix("lock"), None);
        assert_eq!(sequence_suffix("lock-00000000x1"), None);
    }
}
