"""Model of the cuzk proving daemon.

- :mod:`cuzk_diag.model.daemon`: a discrete-event model of the daemon's pipeline for every code
  era; it writes realistic logs with ground truth (the test fixtures are made with it) and can
  replay calls measured in a real log instead of drawing its durations.
- :mod:`cuzk_diag.model.replay`: what a log tells the model (configuration, one sample per GPU
  call), the model run under other knobs, and the figures compared (``metrics``).
- :mod:`cuzk_diag.model.whatif`: ``cuzk-diag whatif``: scenarios, the self-check against the
  measured configuration, predictions with intervals (docs/whatif.md).
- :mod:`cuzk_diag.model.savings`: the estimates findings carry in ``analyze``: ``whatif`` on the
  configuration a finding's advice points to, at a bounded cost.
"""
