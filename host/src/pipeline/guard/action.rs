//! What a guard did with one side of a request, and how strong that is.

/// What a guard did.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Rewrite,
    Refuse,
    Stop,
    /// It failed, and its entry says `fail_open`.
    Error,
}

impl Action {
    /// How strong it is: the strongest stands for a guard's side of a request.
    pub fn rank(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Rewrite => 1,
            Self::Error => 2,
            Self::Refuse | Self::Stop => 3,
        }
    }

    pub fn name(self, monitor: bool) -> &'static str {
        match (self, monitor) {
            (Self::Allow, false) => "allow",
            (Self::Rewrite, false) => "rewrite",
            (Self::Refuse, false) => "refuse",
            (Self::Stop, false) => "stop",
            (Self::Error, false) => "error",
            (Self::Allow, true) => "monitor_allow",
            (Self::Rewrite, true) => "monitor_rewrite",
            (Self::Refuse, true) => "monitor_refuse",
            (Self::Stop, true) => "monitor_stop",
            (Self::Error, true) => "monitor_error",
        }
    }
}
