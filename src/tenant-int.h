/*
 * tenant-int.h: what the tenant family (tenant*.c, api-tenant.c) shares
 * only inside itself.  docs/tenants.md is the contract.
 */

#ifndef TENANT_INT_H
#define TENANT_INT_H

enum tenant_state {
	TENANT_NONE,		/* a record (quota, UID), no account here */
	TENANT_ACTIVE,		/* its account exists on this host */
	TENANT_ARCHIVED,	/* its account went after retention */
};

struct tenant {
	char		*name;		/* the owner */
	char		*account;	/* prefix + name */
	char		*home;
	char		*user;		/* mapped to this OS user, or NULL */
	int		 has_uid;
	uid_t		 uid;		/* == gid for the accounts gmux makes */
	gid_t		 gid;
	enum tenant_state state;
	int64_t		 created;
	int64_t		 active;	/* its last job's end (or start) */
	u_int		 q_share;	/* seats; 0: no limit */
	uint64_t	 q_mem;
	u_int		 q_jobs;
	uint64_t	 q_disk;
	uint64_t	 disk_used;
	int64_t		 disk_at;	/* 0: not measured yet */
	int		 allocating;	/* a UID asked of etcd (not kept) */
	int		 making;	/* its account being made (not kept) */
	char		*make_error;	/* why the making failed, told once */
	int		 removing;	/* tenant rm: once its jobs end */
	int		 ending;	/* its archive and removal run */
	char		*end_error;	/* why they failed, told once */
	int64_t		 end_retry;	/* tried again from then (mono ms) */
	int		 subids_busy;	/* usermod gives it its range */
	int		 busy;		/* a job of it started (not kept) */
	char		*subid_error;	/* why that failed (not kept) */
	TAILQ_ENTRY(tenant) entry;
};
TAILQ_HEAD(tenants, tenant);

/* tenant.c: the records, $GMUX_HOME/tenants.json */
struct tenants	*tenants_all(void);
struct tenant	*tenant_find(const char *);
struct tenant	*tenant_get(const char *);
void		 tenant_forget(struct tenant *);
void		 tenants_save(void);
int		 tenants_parse(const char *, size_t);
void		 tenants_reset(void);
int		 tenant_name_check(const char *, char **);
json_t		*tenant_to_json(const struct tenant *);
int		 tenant_uid_range(uid_t *, uid_t *);
int		 tenant_uid_taken(uid_t, const struct tenant *);
uid_t		 tenant_uid_derive(const char *, uid_t, uid_t);
uint64_t	 tenant_disk_limit(const struct tenant *);
const char	*tenant_home_root(void);

/*
 * A watched tool (proc_async) with its standard error merged into what it
 * prints, so that a failure names the tool's own reason.
 */
#define TENANT_MERGED	"exec 2>&1; exec \"$0\" \"$@\""

/* tenant-account.c: accounts */
char		*tenant_tool_cause(const char *, const char *, char *, int);

/* tenant-end.c: an account's archive and removal, off the loop */
int		 tenant_archive(struct tenant *);
int		 tenant_remove(struct tenant *);
void		 tenant_remove_tick(void);
void		 tenant_idle_tick(void);

/* tenant-retention.c */
int		 tenant_busy(const char *);
void		 tenant_home_quota(const struct tenant *);

/* tenant-subid.c: the account's subordinate UIDs (its containers) */
int		 tenant_subids(struct tenant *, char **);

/* tenant-uid.c: a UID allocated once in the cluster's store */
int		 tenant_cluster_uid(struct tenant *, char **);

/* tenant-quota.c */
void		 tenant_quota_tick(void);

/* tenant-disk.c: homes measured off the loop */
void		 tenant_disk_tick(void);
uint64_t	 tenant_disk_measure(const char *, uint64_t *);

/* tenant-pquota.c: the filesystem's project quotas, where it has them */
int		 tenant_pquota_set(const struct tenant *, uint64_t, char **);
int		 tenant_pquota_used(const struct tenant *, uint64_t *);

#endif
