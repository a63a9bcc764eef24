// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CPU-local memory pools: chunks of nr_index strides, a bitmap of used item
 * slots per chunk, and a registry of every chunk so that urcu_percpu_free()
 * finds the pool from the pointer alone. One mutex protects all of it:
 * allocation is not a hot path, and a single lock leaves no lock order to
 * get wrong between "find the chunk" and "update its pool".
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef HAVE_LIBNUMA
#include <numa.h>
#endif
#include <urcu/arch.h>
#include <urcu/compiler.h>
#include <urcu/list.h>

#include <urcu/percpu/pool.h>
#include "common.h"
#include "percpu-fork.h"

#define BITS_PER_WORD	(sizeof(unsigned long) * CHAR_BIT)

struct pool_chunk {
	struct cds_list_head pool_node;		/* in pool->chunks */
	struct cds_list_head registry_node;	/* in registry */
	struct urcu_percpu_pool *pool;
	char *base;			/* index 0's stride */
	size_t used;			/* live items */
	size_t pristine;		/* slots from here on were never handed out */
	size_t hint;			/* bitmap word to start searching at */
	unsigned long bitmap[];		/* one bit per slot: 1 = allocated */
};

struct urcu_percpu_pool {
	struct cds_list_head chunks;
	size_t item_size;		/* rounded: alignment and slot size */
	size_t nr_slots;		/* per chunk */
	int nr_index;
	int mode;			/* URCU_RSEQ_INDEX_* */
	bool numa;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static CDS_LIST_HEAD(registry);		/* every chunk of every pool */

/* Size and alignment: a power of two up to a cache line, then whole lines. */
static size_t item_size_for(size_t len)
{
	size_t s = 1;

	if (len > CAA_CACHE_LINE_SIZE)
		return (len + CAA_CACHE_LINE_SIZE - 1)
			& ~((size_t) CAA_CACHE_LINE_SIZE - 1);
	while (s < len)
		s <<= 1;
	return s;
}

struct urcu_percpu_pool *urcu_percpu_pool_create(size_t item_len,
		const struct urcu_percpu_pool_attr *attr)
{
	struct urcu_percpu_pool_attr def = { 0, 0 };
	struct urcu_percpu_pool *pool;
	long page = sysconf(_SC_PAGESIZE);
	unsigned int known = URCU_PERCPU_MM_CID | URCU_PERCPU_NUMA
		| URCU_PERCPU_NO_NUMA;

	urcu_rseq_percpu_fork_register();
	if (!attr)
		attr = &def;
	if (item_len == 0 || item_len > URCU_PERCPU_STRIDE
			|| (attr->flags & ~known) || attr->nr_index < 0
			|| ((attr->flags & URCU_PERCPU_NUMA)
				&& (attr->flags & URCU_PERCPU_NO_NUMA))
			|| (page > 0 && URCU_PERCPU_STRIDE % (size_t) page)) {
		errno = EINVAL;
		return NULL;
	}
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	CDS_INIT_LIST_HEAD(&pool->chunks);
	pool->item_size = item_size_for(item_len);
	pool->nr_slots = URCU_PERCPU_STRIDE / pool->item_size;
	pool->nr_index = attr->nr_index ? attr->nr_index : urcu_rseq_nr_cpus();
	pool->mode = urcu_rseq_index_mode((attr->flags & URCU_PERCPU_MM_CID) ?
			URCU_RSEQ_INDEX_MM_CID : URCU_RSEQ_INDEX_CPU);
#ifdef HAVE_LIBNUMA
	/* Binding by CPU makes no sense for ids that follow threads around. */
	if (!(attr->flags & URCU_PERCPU_NO_NUMA)
			&& pool->mode == URCU_RSEQ_INDEX_CPU
			&& numa_available() >= 0 && numa_max_node() > 0)
		pool->numa = true;
#endif
	return pool;
}

static void chunk_unmap(struct urcu_percpu_pool *pool, struct pool_chunk *ch)
{
	munmap(ch->base, (size_t) pool->nr_index * URCU_PERCPU_STRIDE);
	free(ch);
}

int urcu_percpu_pool_destroy(struct urcu_percpu_pool *pool)
{
	struct pool_chunk *ch, *tmp;

	if (!pool) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&pool_lock);
	cds_list_for_each_entry(ch, &pool->chunks, pool_node) {
		if (ch->used) {
			pthread_mutex_unlock(&pool_lock);
			errno = EBUSY;
			return -1;
		}
	}
	cds_list_for_each_entry_safe(ch, tmp, &pool->chunks, pool_node) {
		cds_list_del(&ch->registry_node);
		chunk_unmap(pool, ch);
	}
	pthread_mutex_unlock(&pool_lock);
	free(pool);
	return 0;
}

static void chunk_bind_numa(struct urcu_percpu_pool *pool, char *base)
{
#ifdef HAVE_LIBNUMA
	int cpu, node;

	if (!pool->numa)
		return;
	for (cpu = 0; cpu < pool->nr_index; cpu++) {
		node = numa_node_of_cpu(cpu);
		if (node >= 0)
			numa_tonode_memory(base + (size_t) cpu * URCU_PERCPU_STRIDE,
					URCU_PERCPU_STRIDE, node);
	}
#endif
}

/* Called with pool_lock held. */
static struct pool_chunk *chunk_create(struct urcu_percpu_pool *pool)
{
	size_t words = (pool->nr_slots + BITS_PER_WORD - 1) / BITS_PER_WORD;
	struct pool_chunk *ch;
	void *base;

	ch = calloc(1, sizeof(*ch) + words * sizeof(unsigned long));
	if (!ch)
		return NULL;
	base = mmap(NULL, (size_t) pool->nr_index * URCU_PERCPU_STRIDE,
			PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		free(ch);
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * Page by page: a kernel that faults anonymous memory in large folios
	 * (THP "always", Debian's default, on its 7.2 where a mapping of 4 MiB
	 * or more is PMD-aligned; mTHP) would make the first write to one
	 * index resident for up to 2 MiB, that is 32 indices' strides, most
	 * of which no CPU ever touches. EINVAL without THP: nothing to undo.
	 */
#ifdef MADV_NOHUGEPAGE
	(void) madvise(base, (size_t) pool->nr_index * URCU_PERCPU_STRIDE,
			MADV_NOHUGEPAGE);
#endif
	ch->base = (char *) base;
	ch->pool = pool;
	chunk_bind_numa(pool, ch->base);
	cds_list_add_tail(&ch->pool_node, &pool->chunks);
	cds_list_add(&ch->registry_node, &registry);
	return ch;
}

/* Take a free slot of @ch (which has one); returns its index. */
static size_t chunk_take_slot(struct urcu_percpu_pool *pool,
		struct pool_chunk *ch)
{
	size_t words = (pool->nr_slots + BITS_PER_WORD - 1) / BITS_PER_WORD;
	size_t w, i, slot;

	for (i = 0; i < words; i++) {
		w = (ch->hint + i) % words;
		if (~ch->bitmap[w] == 0)
			continue;
		slot = w * BITS_PER_WORD
			+ (size_t) __builtin_ctzl(~ch->bitmap[w]);
		if (slot >= pool->nr_slots)
			continue;
		ch->bitmap[w] |= 1UL << (slot % BITS_PER_WORD);
		ch->hint = w;
		ch->used++;
		return slot;
	}
	abort();	/* the caller checked used < nr_slots */
}

/*
 * Clear every copy of a reused slot, writing only to copies that are not
 * already zero so that unused indices stay unbacked.
 */
static void item_clear(struct urcu_percpu_pool *pool, char *item)
{
	size_t len = pool->item_size, j;
	int k;

	for (k = 0; k < pool->nr_index; k++) {
		char *p = (char *) urcu_percpu_ptr(item, k);

		for (j = 0; j < len; j++) {
			if (p[j]) {
				memset(p, 0, len);
				break;
			}
		}
	}
}

void *urcu_percpu_zmalloc(struct urcu_percpu_pool *pool)
{
	struct pool_chunk *ch, *found = NULL;
	size_t slot;
	bool reused;
	char *item;

	if (!pool) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&pool_lock);
	cds_list_for_each_entry(ch, &pool->chunks, pool_node) {
		if (ch->used < pool->nr_slots) {
			found = ch;
			break;
		}
	}
	if (!found)
		found = chunk_create(pool);
	if (!found) {
		pthread_mutex_unlock(&pool_lock);
		return NULL;
	}
	slot = chunk_take_slot(pool, found);
	reused = slot < found->pristine;
	if (!reused)
		found->pristine = slot + 1;
	item = found->base + slot * pool->item_size;
	pthread_mutex_unlock(&pool_lock);
	/* The slot is ours now: clear it outside the lock. */
	if (reused)
		item_clear(pool, item);
	return item;
}

/* The chunk whose index-0 stride holds @p, or NULL. Called with pool_lock. */
static struct pool_chunk *registry_find(const char *p)
{
	struct pool_chunk *ch;

	cds_list_for_each_entry(ch, &registry, registry_node) {
		if (p >= ch->base && p < ch->base + URCU_PERCPU_STRIDE)
			return ch;
	}
	return NULL;
}

void urcu_percpu_free(void *ptr)
{
	struct pool_chunk *ch;
	size_t off, slot;
	unsigned long bit;

	if (!ptr)
		return;
	pthread_mutex_lock(&pool_lock);
	ch = registry_find((char *) ptr);
	if (!ch)
		goto bad;
	off = (size_t) ((char *) ptr - ch->base);
	if (off % ch->pool->item_size)
		goto bad;
	slot = off / ch->pool->item_size;
	if (slot >= ch->pool->nr_slots)
		goto bad;
	bit = 1UL << (slot % BITS_PER_WORD);
	if (!(ch->bitmap[slot / BITS_PER_WORD] & bit))
		goto bad;
	ch->bitmap[slot / BITS_PER_WORD] &= ~bit;
	ch->used--;
	pthread_mutex_unlock(&pool_lock);
	return;
bad:
	pthread_mutex_unlock(&pool_lock);
	urcu_rseq_debug_check(false, "urcu_percpu_free",
			"pointer is not a live item of any per-CPU pool");
	errno = EINVAL;
}

int urcu_percpu_pool_index_mode(const struct urcu_percpu_pool *pool)
{
	return pool ? pool->mode : URCU_RSEQ_INDEX_CPU;
}

int urcu_percpu_pool_nr_index(const struct urcu_percpu_pool *pool)
{
	return pool ? pool->nr_index : 0;
}

size_t urcu_percpu_pool_item_size(const struct urcu_percpu_pool *pool)
{
	return pool ? pool->item_size : 0;
}

/*
 * fork(): see percpu-fork.h. pool_lock is the innermost lock of the
 * per-CPU primitives: nothing is taken while it is held. With it held
 * across fork(), the registry, the chain lists and the bitmaps are whole
 * in the child. What the child loses: items that other threads had
 * allocated (including one whose copies a thread was still clearing after
 * urcu_percpu_zmalloc() let the lock go) stay allocated there, so
 * urcu_percpu_pool_destroy() of their pool fails with EBUSY in the child.
 */
void urcu_rseq_pool_fork_prepare(void)
{
	pthread_mutex_lock(&pool_lock);
}

void urcu_rseq_pool_fork_parent(void)
{
	pthread_mutex_unlock(&pool_lock);
}

void urcu_rseq_pool_fork_child(void)
{
	/* Held by the forking thread only; the child starts it afresh. */
	pthread_mutex_init(&pool_lock, NULL);
}
