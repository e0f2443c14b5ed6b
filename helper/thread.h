/*
 * thread.h - a thread that can be stopped: started with every signal
 * blocked, sleeping and backing off in waits that a stop cuts short, and
 * stopped and joined in one call
 *
 * Signals stay with the threads that handle them (FUSE's and main()'s),
 * as sshfs blocks them around pthread_create.  The watch threads of
 * etcd2.c and etcd3.c use it, and so does fs/echo.c's thread.
 *
 * What it cannot do: stop a thread that does not look at thread_stopping()
 * or wait in thread_sleep(); cancel one (it is never cancelled: it
 * returns).
 */
#ifndef ETCDFS_THREAD_H
#define ETCDFS_THREAD_H

#include <pthread.h>
#include <stdbool.h>

struct thread {
	pthread_t id;
	pthread_mutex_t lock;		/* guards the waits on cond */
	pthread_cond_t cond;		/* broadcast when stop is set */
	volatile bool stop;		/* set once, by thread_stop; may be
					 * handed to transport_stream */
	bool started;
};

/*
 * Starts @fn(@arg) on a new thread with every signal blocked.  @t is
 * zeroed and set up first.  0, or an errno (nothing to release then).
 */
int thread_start(struct thread *t, void *(*fn)(void *), void *arg);

/* True once thread_stop was called. */
bool thread_stopping(struct thread *t);

/* Waits @ms, or less if the thread is being stopped. */
void thread_sleep(struct thread *t, long ms);

/*
 * A pause of @ms that no signal cuts short, for any thread (a retry's
 * wait, where there is no thread of this module to stop).
 */
void thread_pause(long ms);

/* A back-off from @min to @max ms, doubling at each wait. */
struct thread_backoff {
	long min, max, cur;
};

void thread_backoff_init(struct thread_backoff *b, long min, long max);

/* Waits the current back-off (as thread_sleep), then doubles it. */
void thread_backoff_wait(struct thread *t, struct thread_backoff *b);

/* Back to min, after a success. */
void thread_backoff_reset(struct thread_backoff *b);

/*
 * Tells the thread to stop, wakes its waits, joins it and releases @t.
 * Safe on a @t whose start failed or that was stopped already.
 */
void thread_stop(struct thread *t);

#endif /* ETCDFS_THREAD_H */
