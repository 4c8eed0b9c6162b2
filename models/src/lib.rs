//! stateright models of the recipes: the state holds the in-memory server
//! core, the recipe machines, each client's in-flight requests and pending
//! watch events, and the remaining fault budget. The same recipe code that
//! the simulator runs is explored exhaustively here.
