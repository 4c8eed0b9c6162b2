//! [`Setup`]: the size of a model, shared by every recipe module: how many
//! clients, which faults with which budgets, how getChildren orders results.

use crate::faults::FaultBudget;
use crate::model::ChildOrderMode;

/// The knobs every recipe model takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    pub clients: usize,
    pub faults: FaultBudget,
    pub child_order: ChildOrderMode,
    /// Treat clients as interchangeable (see `RecipeModel::symmetry`).
    pub symmetry: bool,
    /// Partial-order reduction (see `crate::reduction`): on by default.
    pub reduction: bool,
}

impl Setup {
    /// `clients` clients, no faults, sorted getChildren results.
    pub fn new(clients: usize) -> Setup {
        Setup {
            clients,
            faults: FaultBudget::NONE,
            child_order: ChildOrderMode::Sorted,
            symmetry: false,
            reduction: true,
        }
    }

    pub fn with_faults(mut self, faults: FaultBudget) -> Setup {
        self.faults = faults;
        self
    }

    pub fn with_symmetry(mut self, symmetry: bool) -> Setup {
        self.symmetry = symmetry;
        self
    }

    pub fn with_reduction(mut self, reduction: bool) -> Setup {
        self.reduction = reduction;
        self
    }

    pub fn with_child_order(mut self, child_order: ChildOrderMode) -> Setup {
        self.child_order = child_order;
        self
    }
}
