"""gunicorn's settings for ``make serve`` (``gunicorn -c python:lens.gunicorn_conf``).

Every value can be overridden on the command line or, where named, from the
environment; gunicorn also reads ``GUNICORN_CMD_ARGS``.
"""

from __future__ import annotations

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"

# Chosen by measurement on a 2-core machine (README, Running in production): GET
# /api/kv/<key> on SQLite over loopback, one keep-alive client (p50) and wrk with 8
# connections (requests/s), the clients on the same cores:
#   gthread   2 processes x 4 threads     1 client 1.18 ms    8 connections   777/s
#   sync      4 processes                 1 client 1.04 ms    8 connections 1,937/s
#   lingering 2 processes x 4 threads     1 client 0.70 ms    8 connections   992/s
#   lingering 2 processes x 2 threads     1 client 0.67 ms    8 connections 1,084/s
#   lingering 3 processes x 2 threads     1 client 0.74 ms    8 connections 1,377/s
#   lingering 4 processes x 2 threads     1 client 0.73 ms    8 connections 1,681/s
# "lingering" is gthread whose threads answer a kept-alive connection's next request
# themselves (lens/gunicorn_worker.py): a third of a read's time was the hand-offs
# between threads. Python holds one lock per process while it runs, so processes, not
# threads, use the cores; two threads each overlap the waits on the database and keep a
# slow page from holding up the calls behind it. The sync worker closes every
# connection after one request (no keep-alive).
# With DB_POOL=1 each process keeps its own pool: DB_POOL_MAX_SIZE >= threads.
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "lens.gunicorn_worker.LingeringThreadWorker")
workers = int(os.environ.get("WEB_CONCURRENCY", "4"))
threads = int(os.environ.get("GUNICORN_THREADS", "2"))

# A request that has not answered in 30 s is stuck: its worker is replaced.
timeout = 30
graceful_timeout = 30
# Behind a proxy that keeps connections open, idle keep-alive sockets cost one file each.
keepalive = 5
# Recycle each worker after about this many requests, staggered so they never restart
# together: bounds the memory any slow leak can take.
max_requests = 2000
max_requests_jitter = 200

# Access log on stdout with the request time in milliseconds (%(M)s); errors on stderr.
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'
# X-Forwarded-* is trusted only from these proxy addresses (gunicorn's own check;
# Django reads X-Forwarded-Proto itself when HTTPS=1).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# No runtime control socket (gunicornc): its default path is shared by every server on
# the machine, so a second instance would take over the first one's.
control_socket_disable = True
