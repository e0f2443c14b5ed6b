/*
 * thread.c - a thread that can be stopped (see thread.h)
 *
 * The waits use CLOCK_MONOTONIC, so that a change of the wall clock
 * neither shortens nor stretches a back-off.
 *
 * What it cannot do: interrupt a blocking call of the thread's own; the
 * thread's code must check thread_stopping() (or pass &t->stop on).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "thread.h"

int thread_start(struct thread *t, void *(*fn)(void *), void *arg)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	memset(t, 0, sizeof(*t));
	rc = pthread_condattr_init(&ca);
	if (rc)
		return rc;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&t->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return rc;
	rc = pthread_mutex_init(&t->lock, NULL);
	if (rc)
		goto err_cond;
	/* the thread must not take the signals FUSE and main() handle */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t->id, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto err_lock;
	t->started = true;
	return 0;

err_lock:
	pthread_mutex_destroy(&t->lock);
err_cond:
	pthread_cond_destroy(&t->cond);
	return rc;
}

bool thread_stopping(struct thread *t)
{
	return __atomic_load_n(&t->stop, __ATOMIC_SEQ_CST);
}

void thread_sleep(struct thread *t, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->lock);
	while (!t->stop &&
	       pthread_cond_timedwait(&t->cond, &t->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&t->lock);
}

int64_t thread_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t thread_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void thread_pause(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

void thread_backoff_init(struct thread_backoff *b, long min, long max)
{
	b->min = min;
	b->max = max;
	b->cur = min;
}

void thread_backoff_wait(struct thread *t, struct thread_backoff *b)
{
	thread_sleep(t, b->cur);
	b->cur = b->cur * 2 > b->max ? b->max : b->cur * 2;
}

void thread_backoff_reset(struct thread_backoff *b)
{
	b->cur = b->min;
}

void thread_stop(struct thread *t)
{
	if (!t->started)
		return;
	pthread_mutex_lock(&t->lock);
	__atomic_store_n(&t->stop, true, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->id, NULL);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	t->started = false;
}
