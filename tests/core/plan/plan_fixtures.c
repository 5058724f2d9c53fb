/*
 * Small models and machines the core planning tests share (see plan_fixtures.h).
 */
#include "tests/core/plan/plan_fixtures.h"

#include <check.h>
#include <string.h>

void t_tiny_dense(struct model_arch *a)
{
	const char *bad = NULL;

	model_arch_init(a);
	strcpy(a->model_type, "llama");
	strcpy(a->llm_arch, "llama");
	a->hidden_size = 512;
	a->n_layers = 8;
	a->n_heads = 8;
	a->n_kv_heads = 2;
	a->intermediate_size = 1536;
	a->vocab_size = 32000;
	a->max_position_embeddings = 32768;
	ck_assert_int_eq(model_arch_validate(a, &bad), 0);
}

void t_gpu_machine(struct plan_machine *m, int64_t gpu, int64_t host)
{
	memset(m, 0, sizeof(*m));
	m->n_dev = 1;
	strcpy(m->dev[0].name, "cuda0");
	m->dev[0].free_bytes = gpu;
	m->dev[0].budget_bytes = gpu;
	m->dev_total_bytes[0] = gpu;
	m->host.budget_bytes = host;
	m->speed.backend = SPEED_BACKEND_CUDA;
	m->speed.n_devices = 1;
	m->speed.devices[0].bandwidth_gbs = 360;
	m->speed.devices[0].compute_tflops = 50;
	m->speed.devices[0].compute = SPEED_COMPUTE_TENSOR;
	m->speed.host.bandwidth_gbs = 50;
	m->speed.host.threads = 8;
	m->threads = 8;
}

void t_vllm_machine(struct plan_machine *m, int64_t gpu, int64_t host)
{
	t_gpu_machine(m, gpu, host);
	m->n_vgpu = 1;
	m->vgpu[0].total_bytes = gpu;
	m->vgpu[0].free_bytes = -1;
}
