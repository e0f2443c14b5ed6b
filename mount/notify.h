/*
 * notify.h - systemd's readiness protocol, without libsystemd
 *
 * When NOTIFY_SOCKET is set (a Type=notify unit), etcdfs tells systemd
 * what it is doing ("STATUS=connecting to ...") and when the mount is up
 * and loaded ("READY=1"), so that units ordered after it start only then;
 * and "STOPPING=1" when it unmounts.
 *
 * What it cannot do: pass file descriptors, or be told anything back
 * (the protocol is one way); watchdog pings are not sent.
 */
#ifndef ETCDFS_NOTIFY_H
#define ETCDFS_NOTIFY_H

/*
 * Reads NOTIFY_SOCKET and takes it out of the environment, so that no
 * process etcdfs starts speaks for it.  Call once, early.
 */
void notify_init(void);

/*
 * Sends one datagram, the formatted text: "KEY=VALUE" lines.  Nothing
 * when NOTIFY_SOCKET was not set; a failure is logged once, as a warning,
 * and never fails the mount.
 */
__attribute__((format(printf, 1, 2)))
void notify(const char *fmt, ...);

/* "STATUS=@msg": fs_config's status. */
void notify_status(const char *msg);

#endif
