"""The run queue and event bus beyond one machine, on Redis (design 0065): the job format and
keys (``jobs``), the shared atomic steps and sweeper (``store``), the web tier
(``serve --queue``: ``web``) and the pool hosts (``pool --queue``: ``host``)."""
