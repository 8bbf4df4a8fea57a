# The text family's post features (epp hate-speech figures): every post of the corpus encoded once
# by a frozen encoder (python -m ensemble_bandits.text), cached under results/embeddings/ with the
# corpus checksum, the encoder, the token limit and, for a reduced scale's first n posts (env posts: n),
# -first<n> in the name (text.embedding_file).  A simulate job of a hate_speech cell reads it; the environment
# lists it (envs/text.py: HateSpeech.derived_inputs) for the workflow's data hook.  About 4 CPU-min
# for MiniLM on one thread.


rule embed_text:
    output:
        "results/embeddings/hate_speech_davidson-{sha}-{encoder}-{max_tokens}{first}.npz",
    log:
        "results/logs/embeddings/hate_speech_davidson-{sha}-{encoder}-{max_tokens}{first}.log",
    wildcard_constraints:
        sha="[0-9a-f]{12}",
        encoder="minilm|gpt2|pythia-14m",
        max_tokens="[0-9]+",
        first="(-first[0-9]+)?",
    # first: the hate-speech simulations wait for it, so it should run beside the other jobs, not after them
    priority: 50
    conda:
        "../envs/pipeline.yaml"
    threads: 1
    resources:
        runtime=30,
        mem_mb=3000,
    params:
        logged=LOGGED,
        data_dir=lambda w: shlex.quote(data_root()),
        posts=lambda w: f" --posts {w.first[len('-first'):]}" if w.first else "",
    shell:
        "OMP_NUM_THREADS=1 {params.logged} {log} python -m ensemble_bandits.text --encoder {wildcards.encoder} "
        "--max-tokens {wildcards.max_tokens} --data-dir {params.data_dir} --cache-dir results/embeddings --threads 1{params.posts}"
