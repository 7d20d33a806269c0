package fsm

// Reasons in FireResult.reason, CompletionResult.reason and Run.reason.
// They are part of the replicated state and of the API: never rename one.
// Run.reason may also be a reason the executor reported with its outcome
// (dispatch.ReasonExecDenied, dispatch.ReasonEgressDenied): the FSM records
// it as given.
const (
	// A fire was refused.
	ReasonGone             = "gone"              // the job does not exist (any more)
	ReasonGeneration       = "generation"        // the fire is for another generation of the job; also a run's, ended because its job moved on
	ReasonDuplicate        = "duplicate"         // the slot is at or before the cursor
	ReasonDuplicateRequest = "duplicate_request" // a manual run with this request id exists
	ReasonNotOpen          = "not_open"          // RETRY of a run that is not waiting for a retry
	ReasonNotDue           = "not_due"           // RETRY before next_attempt_at
	ReasonNotOrphan        = "not_orphan"        // REDISPATCH of a run that is not an orphan (nor its lost attempt)
	ReasonUnknown          = "unknown"           // REDISPATCH of an at_most_once run: marked UNKNOWN
	ReasonBuffered         = "buffered"          // buffer_one: the slot waits for the open run
	ReasonMalformed        = "malformed"         // no such fire kind, or no such outcome
	ReasonStaleTerm        = "stale_term"        // the batch was committed in another term than proposed
	ReasonDeferred         = "deferred"          // a deferring freeze holds the slot until it lifts (status.deferred_slot_unix)
	ReasonFrozen           = "frozen"            // the release of a deferred slot while a freeze matching the job is in force
	// A backfill fire was refused.
	ReasonNoBackfill   = "no_backfill"   // the job has no backfill running (ended, cancelled, another generation's)
	ReasonNotNext      = "not_next"      // the slot is not the backfill's next one
	ReasonBackfillBusy = "backfill_busy" // as many backfill runs are open as the backfill allows
	ReasonOverlapWait  = "overlap_wait"  // overlap buffer_one: a run of the job is open; the slot waits

	// A slot was recorded MISSED (some also refuse a manual fire).
	ReasonPaused         = "paused"
	ReasonBeforeStart    = "before_start"
	ReasonAfterEnd       = "after_end"
	ReasonOverlapSkipped = "overlap_skipped"
	ReasonOpenRunsLimit  = "open_runs_limit" // overlap allow: the job has as many runs open as the batch allows
	ReasonMaxRuns        = "max_runs"        // the job fired max_runs slots already (it was resumed without raising it)

	// A backfill slot was left alone: a successful run of it is in the
	// ledger (no record: the backfill counts it).
	ReasonAlreadySucceeded = "already_succeeded"

	// A slot was recorded SKIPPED: the prefix and the calendar's or the
	// freeze's name (calendar:us-holidays, freeze:year-end).
	ReasonCalendarPrefix = "calendar:"
	ReasonFreezePrefix   = "freeze:"

	// A run was finished by the FSM rather than by its executor.
	ReasonCancelOther   = "cancel_other"
	ReasonDeleted       = "deleted"
	ReasonLeaderChanged = "leader_changed"
	ReasonWorkerLost    = "worker_lost" // at_most_once attempt whose worker missed its lease
	// An operator cancelled the run (RunService.CancelRun).
	ReasonCancelRequested = "cancel_requested"

	// A completion was refused.
	ReasonUnknownRun = "unknown_run"
	ReasonSuperseded = "superseded"
)
