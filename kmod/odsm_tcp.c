// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel-TCP transport: a listening socket, one stream per peer pair,
 * a receiver thread per stream.  Messages are the wire format of
 * odsm_wire.h: a 32-byte header, then the payload.
 *
 * A stream cannot be resynchronised after a malformed header, so one is
 * counted and ends the connection; the peer re-dials.  Sends and the
 * connect carry a timeout (the cluster's timeout_ms), so a dead peer turns
 * into an error, never a hang.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>
#include "odsm.h"
#include "odsm_cluster.h"

/* A TCP connection: its socket, receiver thread and send lock. */
struct tcp_conn {
	struct socket *sock;
	struct task_struct *rx;
	struct mutex tx_lock;		/* one message at a time on the stream */
};

/* The accepting side. */
struct tcp_listener {
	struct socket *sock;
	struct task_struct *acceptor;
};

static inline struct tcp_conn *tc(struct odsm_conn *conn)
{
	return conn->xprt;
}

static void tcp_kill(struct odsm_conn *conn)
{
	kernel_sock_shutdown(tc(conn)->sock, SHUT_RDWR);
}

static void tcp_stop(struct odsm_conn *conn)
{
	kthread_stop(tc(conn)->rx);
	put_task_struct(tc(conn)->rx);
	tc(conn)->rx = NULL;
}

static void tcp_release(struct odsm_conn *conn)
{
	sock_release(tc(conn)->sock);
	kfree(tc(conn));
}

static int tcp_peer_ipv4(struct odsm_conn *conn, __be32 *ip)
{
	struct sockaddr_in from;

	if (kernel_getpeername(tc(conn)->sock, (struct sockaddr *)&from) < 0 ||
	    from.sin_family != AF_INET)
		return -ENOTCONN;
	*ip = from.sin_addr.s_addr;
	return 0;
}

static void sock_tune(struct socket *sock, u32 timeout_ms)
{
	sock->sk->sk_sndtimeo = msecs_to_jiffies(timeout_ms);
	tcp_sock_set_nodelay(sock->sk);
}

/*
 * Read exactly len bytes: 0; -ECONNRESET when the stream ends (or fails)
 * before the first byte; -EPROTO when it ends part-way, a truncated
 * message.
 */
static int recv_all(struct socket *sock, void *buf, size_t len)
{
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_WAITALL };
	int n;

	while (iov.iov_len) {
		n = kernel_recvmsg(sock, &msg, &iov, 1, iov.iov_len, MSG_WAITALL);
		if (n <= 0)
			return iov.iov_len < len ? -EPROTO : -ECONNRESET;
		iov.iov_base += n;
		iov.iov_len -= n;
	}
	return 0;
}

/* A message cut short by the end of the stream: dropped and counted. */
static void count_truncated(struct odsm_conn *conn, int ret)
{
	if (ret == -EPROTO && !READ_ONCE(conn->dead)) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		pr_notice_ratelimited("truncated message on a connection %s node %d: closed\n",
				      conn->dialled ? "to" : "from",
				      odsm_conn_peer_id(conn));
	}
}

static int tcp_rx_thread(void *arg)
{
	struct odsm_conn *conn = arg;
	struct socket *sock = tc(conn)->sock;
	u8 raw[ODSM_WIRE_HDR_SIZE];
	struct odsm_wire_hdr h;
	u8 *payload;
	int ret;

	while (!kthread_should_stop() && !READ_ONCE(conn->dead)) {
		ret = recv_all(sock, raw, sizeof(raw));
		if (ret) {
			count_truncated(conn, ret);
			break;
		}
		/* a stream cannot resynchronise after a bad header */
		if (odsm_cluster_check_hdr(conn, raw, &h))
			break;
		payload = NULL;
		if (h.len) {
			payload = kvmalloc(h.len, GFP_KERNEL);
			if (!payload)
				break;
			ret = recv_all(sock, payload, h.len);
			if (ret) {
				/* the header came whole: any end is a cut */
				count_truncated(conn, -EPROTO);
				kvfree(payload);
				break;
			}
		}
		odsm_cluster_rx(conn, &h, payload);
		kvfree(payload);
	}
	odsm_cluster_conn_failed(conn);
	/* the tick (or leave) stops us: wait for it */
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

/* Wrap a connected socket; the connection runs once published. */
static struct odsm_transport_ops tcp_transport;

/*
 * An accepted one (!dialled) is admitted by the core from its source
 * address, or refused: then its receiver, never started, is stopped.
 * A dialled one comes with a reference for the caller.
 */
static struct odsm_conn *tcp_conn_new(struct socket *sock, u32 peer,
				      bool dialled, __be32 from)
{
	struct odsm_conn *conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	struct tcp_conn *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!conn || !t)
		goto err;
	t->sock = sock;
	mutex_init(&t->tx_lock);
	odsm_conn_init(conn, &tcp_transport, t, peer, dialled);
	sock_tune(sock, odsm_cluster_timeout_ms());
	t->rx = kthread_create(tcp_rx_thread, conn, "odsm-rx/%d",
			       peer == U32_MAX ? -1 : (int)peer);
	if (IS_ERR(t->rx))
		goto err;
	get_task_struct(t->rx);
	/*
	 * Ours until the receiver runs: once listed, the connection is the
	 * reaper's too, which may free it (dead, or timed out) before we
	 * wake its receiver.  A dialled one's is the caller's reference.
	 */
	kref_get(&conn->ref);
	if (dialled) {
		odsm_conn_publish(conn);
	} else if (odsm_cluster_admit(conn, from)) {
		kthread_stop(t->rx);
		put_task_struct(t->rx);
		kfree(t);
		kfree(conn);
		return ERR_PTR(-EBUSY);
	}
	wake_up_process(t->rx);
	if (!dialled)
		odsm_conn_put(conn);
	return conn;
err:
	kfree(t);
	kfree(conn);
	return ERR_PTR(-ENOMEM);
}

/*
 * The rest of a message whose first bytes (sent of them) kernel_sendmsg()
 * sent: it must follow, or the stream is lost for every user of the
 * connection.  What cut it short is mostly a signal of the sender's (or
 * io_uring's task work, which counts as one): it ends the wait for room
 * in the socket at once, and would end every later wait too.  So the rest
 * goes in pieces as room comes, looked for every 0.2-1 ms, until no byte
 * has gone for the socket's send timeout (the cluster's timeout): a peer
 * that stops reading, but goes on sending (its PINGs keep it "up"), would
 * otherwise hold tx_lock, and every sender to it, for ever.  Returns the
 * bytes sent in all, or a negative errno.  Under tx_lock.
 */
static int send_rest(struct odsm_conn *conn, struct msghdr *msg, int sent)
{
	struct tcp_conn *t = tc(conn);
	long stall = t->sock->sk->sk_sndtimeo;
	unsigned long end = jiffies + stall;
	int n;

	while (msg_data_left(msg)) {
		if (READ_ONCE(conn->dead))
			return -EHOSTDOWN;
		n = sock_sendmsg(t->sock, msg);
		if (n > 0) {
			sent += n;
			end = jiffies + stall;
			continue;
		}
		/* -EAGAIN: no room for the whole send timeout */
		if (n != -EINTR && n != -ERESTARTSYS)
			return n ? n : -EIO;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		odsm_stat_inc(ODSM_STAT_tcp_send_waits);
		usleep_range(200, 1000);
	}
	return sent;
}

static int tcp_send(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		    const void *payload, u32 plen, const void *data, u32 dlen)
{
	struct tcp_conn *t = tc(conn);
	u8 raw[ODSM_WIRE_HDR_SIZE];
	struct kvec iov[3] = {
		{ .iov_base = raw, .iov_len = sizeof(raw) },
		{ .iov_base = (void *)payload, .iov_len = plen },
		{ .iov_base = (void *)data, .iov_len = dlen },
	};
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	size_t total = sizeof(raw) + plen + dlen;
	int n;

	odsm_wire_put_hdr(raw, h);
	mutex_lock(&t->tx_lock);
	if (READ_ONCE(conn->dead)) {
		mutex_unlock(&t->tx_lock);
		return -EHOSTDOWN;
	}
	n = kernel_sendmsg(t->sock, &msg, iov, 3, total);
	if (n == -EINTR || n == -ERESTARTSYS) {
		/* nothing went: the message never began */
		mutex_unlock(&t->tx_lock);
		return -EINTR;
	}
	if (n >= 0 && n < total)
		n = send_rest(conn, &msg, n);
	mutex_unlock(&t->tx_lock);
	if (n != total) {
		/* a partial message leaves the stream unusable */
		odsm_conn_kill(conn);
		return -EHOSTDOWN;
	}
	odsm_stat_inc(ODSM_STAT_msgs_tx);
	return 0;
}

/* The accepting side, from listen to unlisten. */
static struct tcp_listener *tcp_lis;

/*
 * Accept connections.  Only a node that dials this one may connect: a
 * socket from any other address is closed before it costs a thread, and
 * the core bounds the unauthenticated connections it admits (see
 * odsm_cluster_admit()), so a flood of connections that say nothing can
 * neither exhaust threads nor keep a real peer out.  Accepting never
 * waits on a connection, so the backlog drains.
 */
static int acceptor_thread(void *arg)
{
	struct tcp_listener *l = arg;
	struct sockaddr_in from;
	struct odsm_conn *conn;
	struct socket *sock;

	while (!kthread_should_stop()) {
		if (kernel_accept(l->sock, &sock, 0)) {
			if (kthread_should_stop())
				break;
			/* shut down, or no memory: breathe */
			schedule_timeout_interruptible(msecs_to_jiffies(50));
			continue;
		}
		if (kernel_getpeername(sock, (struct sockaddr *)&from) < 0 ||
		    from.sin_family != AF_INET ||
		    odsm_cluster_accept_from(from.sin_addr.s_addr)) {
			sock_release(sock);
			continue;
		}
		/* the HELLO tells who it is: until then it may say nothing else */
		conn = tcp_conn_new(sock, U32_MAX, false, from.sin_addr.s_addr);
		if (IS_ERR(conn))
			sock_release(sock);
	}
	return 0;
}

static int tcp_listen(void)
{
	struct sockaddr_in a = odsm_cluster_addr(odsm_cluster_self());
	struct tcp_listener *l;
	int ret;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			       &l->sock);
	if (ret)
		goto err_free;
	l->sock->sk->sk_reuse = SK_CAN_REUSE;
	ret = kernel_bind(l->sock, (struct sockaddr *)&a, sizeof(a));
	if (ret) {
		pr_err("cannot listen on %pISpc: %d\n", &a, ret);
		goto err_sock;
	}
	ret = kernel_listen(l->sock, ODSM_MAX_NODES);
	if (ret)
		goto err_sock;
	l->acceptor = kthread_run(acceptor_thread, l, "odsm-accept");
	if (IS_ERR(l->acceptor)) {
		ret = PTR_ERR(l->acceptor);
		goto err_sock;
	}
	tcp_lis = l;
	get_task_struct(l->acceptor);
	return 0;
err_sock:
	sock_release(l->sock);
err_free:
	kfree(l);
	return ret;
}

static void tcp_unlisten(void)
{
	struct tcp_listener *l = tcp_lis;

	kernel_sock_shutdown(l->sock, SHUT_RDWR);
	kthread_stop(l->acceptor);
	put_task_struct(l->acceptor);
	sock_release(l->sock);
	kfree(l);
	tcp_lis = NULL;
}

/*
 * Connect, within timeout_ms, and no longer than the cluster is joined: a
 * dead peer's address answers nothing, and a leave waits for the dial
 * under way (cancel_work_sync()), so a blocking connect would make every
 * leave with a dead lower peer wait out a timeout (all nodes leaving
 * together: the first to unload powers off).  The connect runs without
 * blocking, and its state is looked at every DIAL_POLL_MS.
 */
#define DIAL_POLL_MS	20

static int dial_connect(struct socket *sock, struct sockaddr_in *a)
{
	unsigned long end = jiffies + msecs_to_jiffies(odsm_cluster_timeout_ms());
	int ret;

	ret = kernel_connect(sock, (struct sockaddr *)a, sizeof(*a), O_NONBLOCK);
	if (ret != -EINPROGRESS)
		return ret;
	for (;;) {
		switch (READ_ONCE(sock->sk->sk_state)) {
		case TCP_SYN_SENT:
			break;
		case TCP_CLOSE:
			ret = sock_error(sock->sk);
			return ret ? ret : -ECONNREFUSED;
		default:
			/* connected (and maybe closed by the peer since:
			 * the receiver will see that)
			 */
			return 0;
		}
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		if (odsm_cluster_leaving())
			return -ESHUTDOWN;
		schedule_timeout_interruptible(msecs_to_jiffies(DIAL_POLL_MS));
	}
}

/* Connect to peer; the new connection, with a reference for the caller. */
static struct odsm_conn *tcp_dial(u32 peer)
{
	struct sockaddr_in a = odsm_cluster_addr(peer);
	struct odsm_conn *conn;
	struct socket *sock;
	int ret;

	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			       &sock);
	if (ret)
		return ERR_PTR(ret);
	sock_tune(sock, odsm_cluster_timeout_ms());
	ret = dial_connect(sock, &a);
	if (ret) {
		sock_release(sock);
		return ERR_PTR(ret);
	}
	conn = tcp_conn_new(sock, peer, true, 0);
	if (IS_ERR(conn))
		sock_release(sock);
	return conn;
}

static struct odsm_transport_ops tcp_transport = {
	.name = "tcp",
	.id = ODSM_TRANSPORT_TCP,
	.listen = tcp_listen,
	.unlisten = tcp_unlisten,
	.dial = tcp_dial,
	.send = tcp_send,
	.kill = tcp_kill,
	.stop = tcp_stop,
	.release = tcp_release,
	.peer_ipv4 = tcp_peer_ipv4,
};

int odsm_tcp_init(void)
{
	odsm_transport_register(&tcp_transport);
	return 0;
}

void odsm_tcp_exit(void)
{
	odsm_transport_unregister(&tcp_transport);
}
