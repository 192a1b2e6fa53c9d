"""The composition root: options → config → completed config; the controller registry; the
controller context; and the run sequence (serve → elect → start controllers → informers)."""
