// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of tools/odsmctl/odsm_conf.c, the parser of the cluster
 * configuration file that "odsmctl up" reads: good files give the values
 * they say (defaults where they say nothing), and each kind of mistake
 * gives -EINVAL and the one message that names the file and the line.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odsm_conf.h"

#include "ksft_host.h"

static struct odsm_conf conf;
static char err[ODSM_CONF_ERR_LEN];

static int parse(const char *text)
{
	err[0] = '\0';
	return odsm_conf_parse(&conf, "t.conf", text, err, sizeof(err)) ?:
	       odsm_conf_check(&conf, err, sizeof(err));
}

static unsigned int addr(const char *ip)
{
	struct in_addr in;

	inet_pton(AF_INET, ip, &in);
	return in.s_addr;
}

/* the lines every good file below needs */
#define BASE "node_id = 1\nnodes = 10.0.0.1, 10.0.0.2\nkey_file = /k\n"

/* text is refused, with exactly this message */
#define ASSERT_REFUSED(text, msg) do {				\
	ASSERT_EQ(-EINVAL, parse(text));			\
	ASSERT_STREQ(msg, err);					\
} while (0)

TEST(full_file)
{
	static const char text[] =
		"# the cluster of the lab\n"
		"\n"
		"node_id = 2\n"
		"nodes = 192.168.10.11:7100, 192.168.10.12\n"
		"  nodes=192.168.10.13:7200 192.168.10.14	# two more\n"
		"transport = rdma\n"
		"key_file = /etc/odsm/cluster.key\n"
		"heartbeat_ms = 250\n"
		"timeout_ms = 0x1388\n"
		"heap_base = 0x200000000000\n"
		"part_size = 2G\n"
		"wait_s = 0\n"
		"cache_budget_bytes = 16M\n"
		"readahead_pages = 32\n"
		"onesided = no\n"
		"nic_atomics = Yes\n";

	ASSERT_EQ(0, parse(text));
	ASSERT_EQ(2, conf.node_id);
	ASSERT_EQ(4U, conf.nr_nodes);
	ASSERT_EQ(addr("192.168.10.11"), conf.nodes[0].ipv4);
	ASSERT_EQ(7100, conf.nodes[0].port);
	ASSERT_EQ(addr("192.168.10.12"), conf.nodes[1].ipv4);
	ASSERT_EQ(7100, conf.nodes[1].port);
	ASSERT_EQ(addr("192.168.10.13"), conf.nodes[2].ipv4);
	ASSERT_EQ(7200, conf.nodes[2].port);
	ASSERT_EQ(addr("192.168.10.14"), conf.nodes[3].ipv4);
	ASSERT_EQ(5U, conf.node_line[3]);
	ASSERT_EQ((unsigned int)ODSM_TRANSPORT_RDMA, conf.transport);
	ASSERT_STREQ("/etc/odsm/cluster.key", conf.key_file);
	ASSERT_EQ(250U, conf.heartbeat_ms);
	ASSERT_EQ(5000U, conf.timeout_ms);
	ASSERT_EQ(0x200000000000ULL, conf.heap_base);
	ASSERT_EQ(2ULL << 30, conf.part_size);
	ASSERT_EQ(0U, conf.wait_s);
	ASSERT_EQ(4U, conf.nr_knobs);
	ASSERT_STREQ("cache_budget_bytes", conf.knobs[0].knob->name);
	ASSERT_STREQ("/sys/kernel/odsm/cache_budget_bytes", conf.knobs[0].knob->path);
	ASSERT_STREQ("16777216", conf.knobs[0].value);
	ASSERT_EQ(13U, conf.knobs[0].line);
	ASSERT_STREQ("32", conf.knobs[1].value);
	ASSERT_STREQ("/sys/module/odsm/parameters/onesided", conf.knobs[2].knob->path);
	ASSERT_STREQ("N", conf.knobs[2].value);
	ASSERT_STREQ("Y", conf.knobs[3].value);
}

TEST(defaults)
{
	ASSERT_EQ(0, parse(BASE));
	ASSERT_EQ(1, conf.node_id);
	ASSERT_EQ((unsigned int)ODSM_TRANSPORT_TCP, conf.transport);
	ASSERT_EQ(0U, conf.heartbeat_ms);	/* the module's */
	ASSERT_EQ(0U, conf.timeout_ms);
	ASSERT_EQ(0ULL, conf.heap_base);		/* as the node has it */
	ASSERT_EQ(0ULL, conf.part_size);
	ASSERT_EQ(60U, conf.wait_s);
	ASSERT_EQ(0U, conf.nr_knobs);
}

TEST(auto_id_crlf_and_relative_key)
{
	ASSERT_EQ(0, odsm_conf_parse(&conf, "/etc/odsm/c.conf",
				     "node_id = auto\r\nnodes = 10.0.0.1,10.0.0.2\r\n"
				     "key_file = keys/cluster.key\r\n", err, sizeof(err)));
	ASSERT_EQ(0, odsm_conf_check(&conf, err, sizeof(err)));
	ASSERT_EQ(ODSM_CONF_NODE_AUTO, conf.node_id);
	ASSERT_EQ(2U, conf.nr_nodes);
	/* relative to the file's directory */
	ASSERT_STREQ("/etc/odsm/keys/cluster.key", conf.key_file);
}

TEST(every_knob_is_known)
{
	const struct odsm_knob *k;
	char text[512];

	for (k = odsm_knobs; k->name; k++) {
		snprintf(text, sizeof(text), BASE "%s = %s\n", k->name,
			 k->is_bool ? "off" : k->is_count ? "4096" : "4K");
		ASSERT_EQ(0, parse(text));
		ASSERT_EQ(1U, conf.nr_knobs);
		ASSERT_STREQ(k->is_bool ? "N" : "4096", conf.knobs[0].value);
		ASSERT_EQ(4U, conf.knobs[0].line);
	}
}

TEST(line_errors)
{
	ASSERT_REFUSED(BASE "timout_ms = 3000\n", "t.conf:4: unknown key 'timout_ms'");
	ASSERT_REFUSED("node_id = 1\njust words\n", "t.conf:2: 'just words' is not KEY = VALUE");
	ASSERT_REFUSED("node_id =\n", "t.conf:1: node_id has no value");
	ASSERT_REFUSED("# c\n = 3\n", "t.conf:2: no key before '='");
	ASSERT_REFUSED(BASE "transport = udp\n", "t.conf:4: transport = udp: want tcp or rdma");
	ASSERT_REFUSED(BASE "transport = tcp\ntransport = rdma\n",
		       "t.conf:5: transport given twice (first at line 4)");
	ASSERT_REFUSED(BASE "node_id = 0\n", "t.conf:4: node_id given twice (first at line 1)");
	ASSERT_REFUSED("node_id = 256\n", "t.conf:1: node_id = 256: want auto or a number from 0 to 255");
	ASSERT_REFUSED("node_id = -1\n", "t.conf:1: node_id = -1: want auto or a number from 0 to 255");
	ASSERT_REFUSED(BASE "heartbeat_ms = 0\n",
		       "t.conf:4: heartbeat_ms = 0: want a number from 1 to 10000");
	ASSERT_REFUSED(BASE "timeout_ms = 60001\n",
		       "t.conf:4: timeout_ms = 60001: want a number from 1 to 60000");
	ASSERT_REFUSED(BASE "timeout_ms = 2s\n",
		       "t.conf:4: timeout_ms = 2s: want a number from 1 to 60000");
	ASSERT_REFUSED(BASE "wait_s = 3601\n", "t.conf:4: wait_s = 3601: want a number from 0 to 3600");
	ASSERT_REFUSED(BASE "part_size = 3M\n", "t.conf:4: part_size = 3M: want a multiple of 2M, at most 64G");
	ASSERT_REFUSED(BASE "part_size = 128G\n", "t.conf:4: part_size = 128G: want a multiple of 2M, at most 64G");
	ASSERT_REFUSED(BASE "part_size = 0\n", "t.conf:4: part_size = 0: want a multiple of 2M, at most 64G");
	ASSERT_REFUSED(BASE "heap_base = 1G\n",
		       "t.conf:4: heap_base = 1G: want an address of at least 4G, a multiple of 2M");
	ASSERT_REFUSED(BASE "onesided = maybe\n", "t.conf:4: onesided = maybe: want yes or no");
	ASSERT_REFUSED(BASE "premap_blocks = many\n",
		       "t.conf:4: premap_blocks = many: want a number");
	/* a count with a size's suffix: 512M MiB would be 512 TiB */
	ASSERT_REFUSED(BASE "store_reserve_mb = 512M\n",
		       "t.conf:4: store_reserve_mb = 512M: want a number");
	ASSERT_REFUSED(BASE "readahead_pages = 1K\n",
		       "t.conf:4: readahead_pages = 1K: want a number");
	ASSERT_REFUSED(BASE "cache_budget_bytes = 1Q\n",
		       "t.conf:4: cache_budget_bytes = 1Q: want a number (K, M or G allowed)");
	ASSERT_REFUSED(BASE "lazy_threshold = 1M\nlazy_threshold = 2M\n",
		       "t.conf:5: lazy_threshold given twice (first at line 4)");
}

TEST(node_list_errors)
{
	ASSERT_REFUSED("nodes = 10.0.0.1, host-b\n",
		       "t.conf:1: bad node address 'host-b' (want IPv4[:PORT], port 1..65535, default 7100)");
	ASSERT_REFUSED("nodes = 10.0.0.1:0\n",
		       "t.conf:1: bad node address '10.0.0.1:0' (want IPv4[:PORT], port 1..65535, default 7100)");
	ASSERT_REFUSED("nodes = 10.0.0.1:65536\n",
		       "t.conf:1: bad node address '10.0.0.1:65536' (want IPv4[:PORT], port 1..65535, default 7100)");
	ASSERT_REFUSED("nodes = 10.0.0.1:+80\n",
		       "t.conf:1: bad node address '10.0.0.1:+80' (want IPv4[:PORT], port 1..65535, default 7100)");
	ASSERT_REFUSED("nodes = 0.0.0.0\n",
		       "t.conf:1: bad node address '0.0.0.0' (want IPv4[:PORT], port 1..65535, default 7100)");
	/* the same address and port twice: both places named */
	ASSERT_REFUSED("nodes = 10.0.0.1, 10.0.0.2\n\nnodes = 10.0.0.1:7100\n",
		       "t.conf:3: '10.0.0.1:7100' is both node 0 (line 1) and node 2");
	/* another port is another node */
	ASSERT_EQ(0, parse("node_id = 0\nnodes = 10.0.0.1, 10.0.0.1:7101\nkey_file = k\n"));
}

TEST(too_many_nodes)
{
	char *text = malloc(ODSM_MAX_NODES * 24 + 64), *p = text;
	int i;

	ASSERT_NE(NULL, text);
	for (i = 0; i <= ODSM_MAX_NODES; i++)
		p += sprintf(p, "nodes = 10.0.%d.%d\n", i / 200, i % 200 + 1);
	ASSERT_REFUSED(text, "t.conf:257: more than 256 nodes");
	free(text);
}

TEST(long_line)
{
	size_t n = 9000;
	char *text = malloc(n + 32);

	ASSERT_NE(NULL, text);
	snprintf(text, n + 32, "node_id = 0\nnodes = ");
	memset(text + strlen(text), ' ', n);
	text[n] = '\0';
	ASSERT_REFUSED(text,
		       "t.conf:2: line longer than 8191 bytes (split a long nodes list over several 'nodes =' lines)");
	free(text);
}

TEST(whole_file_errors)
{
	ASSERT_REFUSED("node_id = 0\nkey_file = k\n",
		       "t.conf: no 'nodes =' or 'hosts_file =' line: the cluster's addresses are required");
	ASSERT_REFUSED("node_id = 0\n\nnodes = 10.0.0.1\nkey_file = k\n",
		       "t.conf:3: a cluster needs at least 2 nodes, the file lists 1");
	ASSERT_REFUSED("nodes = 10.0.0.1, 10.0.0.2\nkey_file = k\n",
		       "t.conf: no 'node_id =' line: this node's id (a number, or auto) is required");
	ASSERT_REFUSED("\nnode_id = 2\nnodes = 10.0.0.1, 10.0.0.2\nkey_file = k\n",
		       "t.conf:2: node_id = 2 but the cluster has 2 nodes (ids 0..1)");
	ASSERT_REFUSED("node_id = 0\nnodes = 10.0.0.1, 10.0.0.2\n",
		       "t.conf: no 'key_file =' line: the cluster key is required (odsmctl keygen FILE makes one)");
	ASSERT_REFUSED(BASE "timeout_ms = 150\n",
		       "t.conf:4: timeout_ms (150) must be longer than heartbeat_ms (200)");
	ASSERT_REFUSED(BASE "heartbeat_ms = 2000\n",
		       "t.conf:4: timeout_ms (2000) must be longer than heartbeat_ms (2000)");
	ASSERT_REFUSED(BASE "hosts_file = /etc/odsm/hosts\n",
		       "t.conf:4: hosts_file and nodes (line 2) both given: use one");
}

/* odsm_conf_load: files on disk, the hosts file relative to the config */
static void put(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(text, 1, len, f) != len || fclose(f))
		abort();
}

FIXTURE(files) {
	char dir[64], conf[128], hosts[128];
};

FIXTURE_SETUP(files)
{
	snprintf(self->dir, sizeof(self->dir), "/tmp/odsm-conf-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->conf, sizeof(self->conf), "%s/cluster.conf", self->dir);
	snprintf(self->hosts, sizeof(self->hosts), "%s/hosts", self->dir);
}

FIXTURE_TEARDOWN(files)
{
	unlink(self->conf);
	unlink(self->hosts);
	rmdir(self->dir);
}

TEST_F(files, hosts_file)
{
	static const char c[] = "node_id = 1\nhosts_file = hosts\nkey_file = /k\n";
	static const char h[] = "# the lab\n10.0.0.1 node-a\n\n10.0.0.2:7101  # b\n10.0.0.3\n";

	put(self->conf, c, strlen(c));
	put(self->hosts, h, strlen(h));
	ASSERT_EQ(0, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	ASSERT_STREQ(self->hosts, conf.hosts_file);
	ASSERT_EQ(3U, conf.nr_nodes);
	ASSERT_EQ(addr("10.0.0.2"), conf.nodes[1].ipv4);
	ASSERT_EQ(7101, conf.nodes[1].port);
	ASSERT_EQ(5U, conf.node_line[2]);
	ASSERT_EQ(1, conf.node_in_hosts[2]);
}

TEST_F(files, hosts_file_errors)
{
	static const char c[] = "node_id = 1\n\nhosts_file = hosts\nkey_file = /k\n";
	char want[512];

	put(self->conf, c, strlen(c));
	/* missing: the config's line that names it */
	ASSERT_EQ(-EINVAL, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:3: hosts_file %s: cannot open: No such file or directory",
		 self->conf, self->hosts);
	ASSERT_STREQ(want, err);
	/* a bad line: the hosts file's own name and line */
	put(self->hosts, "10.0.0.1\n10.0.0.2 b c\n", 22);
	ASSERT_EQ(-EINVAL, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:2: 'c' after '10.0.0.2 b': want ADDRESS [NAME]",
		 self->hosts);
	ASSERT_STREQ(want, err);
	put(self->hosts, "10.0.0.1\n10.0.0.2\n10.0.0.1\n", 27);
	ASSERT_EQ(-EINVAL, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:3: '10.0.0.1' is both node 0 (hosts_file line 1) and node 2",
		 self->hosts);
	ASSERT_STREQ(want, err);
	put(self->hosts, "10.0.0.1\n", 9);
	ASSERT_EQ(-EINVAL, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:3: a cluster needs at least 2 nodes, the hosts file lists 1",
		 self->conf);
	ASSERT_STREQ(want, err);
}

TEST_F(files, unreadable_config)
{
	char want[512];

	ASSERT_EQ(-EINVAL, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", self->conf);
	ASSERT_STREQ(want, err);
	put(self->conf, "node_id = 0\n\0junk\n", 18);
	ASSERT_EQ(-EINVAL, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: not a text file (it holds a NUL byte)", self->conf);
	ASSERT_STREQ(want, err);
	/* a good file loads whole: parse and check */
	put(self->conf, BASE, strlen(BASE));
	ASSERT_EQ(0, odsm_conf_load(&conf, self->conf, err, sizeof(err)));
	ASSERT_EQ(2U, conf.nr_nodes);
}

/* the numbers odsmctl's options take too: no sign, no overflow */
TEST(numbers)
{
	uint64_t v;

	EXPECT_EQ(0, odsm_conf_parse_num("4096", 0, &v));
	EXPECT_EQ(4096ULL, v);
	EXPECT_EQ(0, odsm_conf_parse_num("0x10", 0, &v));
	EXPECT_EQ(16ULL, v);
	EXPECT_EQ(0, odsm_conf_parse_num("2M", 1, &v));
	EXPECT_EQ(2ULL << 20, v);
	EXPECT_EQ(0, odsm_conf_parse_num("16G", 1, &v));
	EXPECT_EQ(16ULL << 30, v);
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num("2M", 0, &v));
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num("-1", 1, &v));
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num("-4294967294", 1, &v));
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num(" 1", 1, &v));
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num("", 1, &v));
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num("1x", 1, &v));
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num("17179869185G", 1, &v));
	EXPECT_EQ(-EINVAL, odsm_conf_parse_num("99999999999999999999", 1, &v));
	EXPECT_EQ(0, odsm_conf_parse_num("17179869183G", 1, &v));
	EXPECT_EQ(17179869183ULL << 30, v);
}

TEST_HARNESS_MAIN
