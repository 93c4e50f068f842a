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
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>
#include "odsm.h"
#include "odsm_cluster.h"

static void conn_release(struct kref *ref)
{
	struct odsm_conn *conn = container_of(ref, struct odsm_conn, ref);

	sock_release(conn->sock);
	kfree(conn);
}

void odsm_conn_put(struct odsm_conn *conn)
{
	kref_put(&conn->ref, conn_release);
}

/* Stop all traffic: the receiver wakes up and the tick reaps it. */
void odsm_conn_kill(struct odsm_conn *conn)
{
	WRITE_ONCE(conn->dead, true);
	kernel_sock_shutdown(conn->sock, SHUT_RDWR);
}

static void sock_tune(struct socket *sock, u32 timeout_ms)
{
	long t = msecs_to_jiffies(timeout_ms);

	sock->sk->sk_sndtimeo = t;
	tcp_sock_set_nodelay(sock->sk);
}

/* Read exactly len bytes; 0, or -ECONNRESET when the stream ends. */
static int recv_all(struct socket *sock, void *buf, size_t len)
{
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_WAITALL };
	int n;

	while (iov.iov_len) {
		n = kernel_recvmsg(sock, &msg, &iov, 1, iov.iov_len, MSG_WAITALL);
		if (n <= 0)
			return n ? n : -ECONNRESET;
		iov.iov_base += n;
		iov.iov_len -= n;
	}
	return 0;
}

static int conn_rx_thread(void *arg)
{
	struct odsm_conn *conn = arg;
	struct odsm_cluster *c = &odsm_cluster;
	u8 raw[ODSM_WIRE_HDR_SIZE];
	struct odsm_wire_hdr h;
	u8 *payload = NULL;
	int ret;

	while (!kthread_should_stop() && !READ_ONCE(conn->dead)) {
		ret = recv_all(conn->sock, raw, sizeof(raw));
		if (ret)
			break;
		ret = odsm_wire_get_hdr(raw, &h, c->self, c->nr_nodes);
		/* a known peer speaks only for itself */
		if (!ret && conn->peer != U32_MAX && h.src_node != conn->peer)
			ret = -EPROTO;
		/* before HELLO, nothing else */
		if (!ret && conn->peer == U32_MAX && h.type != ODSM_MSG_HELLO)
			ret = -EPROTO;
		if (ret) {
			odsm_stat_inc(ODSM_STAT_bad_msgs);
			pr_notice_ratelimited("odsm: malformed message header (%d) on a connection %s node %d: closed\n",
					      ret, conn->dialled ? "to" : "from",
					      conn->peer == U32_MAX ? -1 : (int)conn->peer);
			break;
		}
		payload = NULL;
		if (h.len) {
			payload = kvmalloc(h.len, GFP_KERNEL);
			if (!payload)
				break;
			ret = recv_all(conn->sock, payload, h.len);
			if (ret) {
				kvfree(payload);
				break;
			}
		}
		odsm_cluster_rx(conn, &h, payload);
		kvfree(payload);
	}
	odsm_cluster_conn_failed(conn);
	/* the tick stops us: wait for it */
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

struct odsm_conn *odsm_conn_new(struct odsm_cluster *c, struct socket *sock,
				u32 peer, bool dialled)
{
	struct odsm_conn *conn = kzalloc(sizeof(*conn), GFP_KERNEL);

	if (!conn)
		return ERR_PTR(-ENOMEM);
	kref_init(&conn->ref);		/* the conns list's reference */
	mutex_init(&conn->tx_lock);
	conn->sock = sock;
	conn->peer = peer;
	conn->dialled = dialled;
	conn->born_ns = ktime_get_ns();
	sock_tune(sock, c->timeout_ms);
	conn->rx = kthread_create(conn_rx_thread, conn, "odsm-rx/%u",
				  peer == U32_MAX ? 0 : peer);
	if (IS_ERR(conn->rx)) {
		struct task_struct *t = conn->rx;

		kfree(conn);
		return ERR_CAST(t);
	}
	get_task_struct(conn->rx);
	spin_lock(&c->lock);
	list_add(&conn->node, &c->conns);
	spin_unlock(&c->lock);
	wake_up_process(conn->rx);
	return conn;
}

int odsm_tcp_send(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		  const void *payload, u32 plen, const void *data, u32 dlen)
{
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
	mutex_lock(&conn->tx_lock);
	if (READ_ONCE(conn->dead)) {
		mutex_unlock(&conn->tx_lock);
		return -EHOSTDOWN;
	}
	n = kernel_sendmsg(conn->sock, &msg, iov, 3, total);
	mutex_unlock(&conn->tx_lock);
	if (n != total) {
		/* a partial message leaves the stream unusable */
		odsm_conn_kill(conn);
		return -EHOSTDOWN;
	}
	odsm_stat_inc(ODSM_STAT_msgs_tx);
	return 0;
}

static int acceptor_thread(void *arg)
{
	struct odsm_cluster *c = arg;
	struct socket *sock;
	struct odsm_conn *conn;
	int ret;

	while (!kthread_should_stop()) {
		ret = kernel_accept(c->listen, &sock, 0);
		if (ret) {
			if (kthread_should_stop())
				break;
			/* listening socket shut down, or no memory: breathe */
			schedule_timeout_interruptible(msecs_to_jiffies(50));
			continue;
		}
		/* the HELLO tells who it is: until then it may say nothing else */
		conn = odsm_conn_new(c, sock, U32_MAX, false);
		if (IS_ERR(conn))
			sock_release(sock);
	}
	return 0;
}

int odsm_tcp_listen(struct odsm_cluster *c)
{
	struct sockaddr_in a = c->peers[c->self].addr;
	struct socket *sock;
	int ret;

	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			       &sock);
	if (ret)
		return ret;
	sock->sk->sk_reuse = SK_CAN_REUSE;
	ret = kernel_bind(sock, (struct sockaddr *)&a, sizeof(a));
	if (ret) {
		pr_err("odsm: cannot listen on %pISpc: %d\n", &a, ret);
		goto err;
	}
	ret = kernel_listen(sock, ODSM_MAX_NODES);
	if (ret)
		goto err;
	c->listen = sock;
	c->acceptor = kthread_run(acceptor_thread, c, "odsm-accept");
	if (IS_ERR(c->acceptor)) {
		ret = PTR_ERR(c->acceptor);
		c->listen = NULL;
		goto err;
	}
	get_task_struct(c->acceptor);
	return 0;
err:
	sock_release(sock);
	return ret;
}

/* Connect to peer; the new connection, with a reference for the caller. */
struct odsm_conn *odsm_tcp_dial(struct odsm_cluster *c, u32 peer)
{
	struct sockaddr_in a = c->peers[peer].addr;
	struct odsm_conn *conn;
	struct socket *sock;
	int ret;

	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			       &sock);
	if (ret)
		return ERR_PTR(ret);
	/* bounds the connect too: a silent address costs one timeout */
	sock_tune(sock, c->timeout_ms);
	ret = kernel_connect(sock, (struct sockaddr *)&a, sizeof(a), 0);
	if (ret) {
		sock_release(sock);
		return ERR_PTR(ret);
	}
	conn = odsm_conn_new(c, sock, peer, true);
	if (IS_ERR(conn)) {
		sock_release(sock);
		return conn;
	}
	kref_get(&conn->ref);
	return conn;
}
