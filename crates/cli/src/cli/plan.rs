//! `cairn plan …`: the iterative planner's commands (SPEC §4).

use clap::Subcommand;

use super::PageArgs;
use cairn_domain::plan::PlanState;

/// A state name as the files spell it (`RE-PLAN`), any case, `REPLAN` too.
fn plan_state(text: &str) -> Result<PlanState, String> {
    PlanState::parse(text).ok_or_else(|| {
        format!(
            "`{text}` is not a plan state; one of EXPLORE, PLAN, EXECUTE, REFLECT, RE-PLAN, CLOSE"
        )
    })
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Start a plan in EXPLORE and make it the active one (.claude/.current_plan)
    #[command(after_help = "Examples:
  cairn plan new \"Move sessions to signed tokens\"
  cairn plan new \"Start over with a smaller scope\" --force")]
    New {
        /// What the plan is for
        goal: String,
        /// Replace an active plan (it stays on disk, in whatever state it was)
        #[arg(long)]
        force: bool,
    },

    /// Where the active plan stands: state, iteration, step, budget, what may come next
    #[command(after_help = "Examples:
  cairn plan status
  cairn --json plan status | jq .state")]
    Status,

    /// Take one transition of the table (PLAN → EXECUTE is `cairn plan approve`)
    ///
    /// EXPLORE → PLAN; EXECUTE → REFLECT; REFLECT → CLOSE, RE-PLAN or EXPLORE; RE-PLAN → PLAN.
    /// Every transition but EXECUTE → REFLECT is logged in decisions.md with the reason; leaving
    /// EXECUTE writes a checkpoint of state.md and plan.md.
    #[command(after_help = "Examples:
  cairn plan go PLAN --reason \"the session store and its callers are mapped\"
  cairn plan go REFLECT --reason \"step 2 done; tests pass\"
  cairn plan go RE-PLAN --reason \"the cache layer keeps breaking\"")]
    Go {
        /// EXPLORE, PLAN, EXECUTE, REFLECT, RE-PLAN or CLOSE
        #[arg(value_parser = plan_state)]
        state: PlanState,
        /// Why, in a sentence (goes to decisions.md)
        #[arg(long)]
        reason: String,
    },

    /// The user approves the plan: PLAN → EXECUTE, starting the next iteration
    ///
    /// A person's act: when stdin is a terminal it asks for the user's words; otherwise it is
    /// refused unless --yes says the user approved (an agent must not approve its own plan).
    #[command(after_help = "Examples:
  cairn plan approve
  cairn plan approve --yes --statement \"yes, go with approach B\"")]
    Approve {
        /// Approve without asking (the user said so, outside this terminal)
        #[arg(long)]
        yes: bool,
        /// What the user said, quoted in decisions.md
        #[arg(long, value_name = "TEXT")]
        statement: Option<String>,
    },

    /// Mark which plan step EXECUTE is working on
    #[command(after_help = "Examples:
  cairn plan step 2
  cairn plan step \"3: wire the token check\"")]
    Step {
        /// The step, as plan.md numbers or names it
        step: String,
    },

    /// Count one autonomous fix attempt on a step (the leash: a third is refused)
    #[command(after_help = "Examples:
  cairn plan fix --step 2 --note \"reverted the import order\"")]
    Fix {
        /// The plan step being fixed
        #[arg(long)]
        step: String,
        /// What the fix was
        #[arg(long)]
        note: String,
    },

    /// Count one failure of an area (the third failure of one area forces RE-PLAN)
    #[command(after_help = "Examples:
  cairn plan fail --area src/cache.rs")]
    Fail {
        /// The file, module or subsystem that failed
        #[arg(long)]
        area: String,
    },

    /// Append a decision to decisions.md (## D-NNN | FROM → TO | YYYY-MM-DD)
    #[command(after_help = "Examples:
  cairn plan decide \"Keep the session table; tokens only wrap its id\"")]
    Decide {
        /// The decision and why
        text: String,
    },

    /// Record a finding in findings.md (with --file, also in findings/FILE)
    #[command(after_help = "Examples:
  cairn plan finding \"Sessions are read in 14 places, all through SessionStore\"
  cairn plan finding \"Tokens must survive a restart (D-002)\" --file auth.md")]
    Finding {
        /// The finding, one line
        text: String,
        /// A file under findings/ to add the details to
        #[arg(long, value_name = "FILE")]
        file: Option<String>,
    },

    /// The complexity budget: files added x/3, new abstractions y/2, net lines, scope
    #[command(after_help = "Examples:
  cairn plan budget
  cairn plan budget --estimate 120        # in PLAN, before the first execution
  cairn plan budget --abstraction TokenSigner")]
    Budget {
        /// Record the scope estimate in lines (PLAN, first iteration only)
        #[arg(long, value_name = "LINES")]
        estimate: Option<u32>,
        /// Count a new class, module or interface introduced in this iteration
        #[arg(long, value_name = "NAME")]
        abstraction: Option<String>,
    },

    /// Close the active plan (REFLECT → CLOSE) and release the pointer
    ///
    /// Refused while a decision in decisions.md is referenced nowhere in plan.md or findings.md.
    #[command(after_help = "Examples:
  cairn plan close --reason \"all success criteria met\"")]
    Close {
        /// Why the plan is done
        #[arg(long)]
        reason: String,
    },

    /// List every plan in the repository, oldest first
    #[command(after_help = "Examples:
  cairn plan list
  cairn --json plan list | jq '.items[] | select(.current)'")]
    List(PageArgs),

    /// Everything an agent needs to continue the active plan
    #[command(after_help = "Examples:
  cairn plan resume")]
    Resume,
}
