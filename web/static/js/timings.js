// A lease's timings as its electors put them in the trace (lease.election_configured, folded
// into each source's lease snapshot), else Kubernetes' defaults as the server sends them in
// hello's config (kube_defaults: written once, in pycm.util.leasetiming), marked assumed.
export const ASSUMED_NOTE =
  "* Kubernetes' default: the trace does not say what this lease's electors run with (a recording older than lease.election_configured, or a lease pycm only watches)";

export function leaseTimings(model, leaseName) {
  let duration = 0;
  let deadline = 0;
  for (const s of model.sources.values()) {
    const lease = (s.snapshot.leases || {})[leaseName];
    if (!lease) continue;
    duration = duration || lease.lease_duration_s || 0;
    deadline = deadline || lease.renew_deadline_s || 0;
  }
  const kube = model.config.kube_defaults || {};
  return {
    duration: duration || kube.lease_duration_s,
    deadline: deadline || kube.renew_deadline_s,
    durationAssumed: !duration,
    deadlineAssumed: !deadline,
  };
}
