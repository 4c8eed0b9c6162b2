//! `zkcheck`: the command line of the ZooKeeper recipe checker.

fn main() {
    println!("zkcheck");
}
