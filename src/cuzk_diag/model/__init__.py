"""Model of the cuzk proving daemon.

:mod:`cuzk_diag.model.daemon` is a discrete-event model of the daemon's pipeline for every code
era; it writes realistic logs with ground truth (the test fixtures are made with it).
"""
