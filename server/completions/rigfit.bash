# bash completion for rigfit. Commands, flags and the names they take come from the binary
# itself (`rigfit help`, `rigfit COMMAND --help`, `rigfit names KIND`), so they never fall
# behind it.
_rigfit()
{
	local cur prev bin cmd
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	bin=${COMP_WORDS[0]}
	cmd=${COMP_WORDS[1]}
	if [ "$COMP_CWORD" -eq 1 ] || { [ "$COMP_CWORD" -eq 2 ] && [ "$cmd" = help ]; }; then
		mapfile -t COMPREPLY < <(compgen -W "$("$bin" help 2>/dev/null |
			sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')" -- "$cur")
		return
	fi
	case $prev in
	--model|--quant|--gpu|--cpu|--hardware-profile|--task)
		# The names the catalogs hold (`rigfit names`), one per line; GPU names have spaces.
		local kind IFS=$'\n'
		case $prev in
		--model) kind=models ;; --quant) kind=quants ;; --gpu) kind=gpus ;; --cpu) kind=cpus ;;
		--hardware-profile) kind=profiles ;; --task) kind=tasks ;;
		esac
		mapfile -t COMPREPLY < <(compgen -W "$("$bin" names "$kind" 2>/dev/null)" -- "$cur")
		if [ "$kind" = gpus ] || [ "$kind" = cpus ]; then COMPREPLY=("${COMPREPLY[@]// /\\ }"); fi
		return 0 ;;
	--format) mapfile -t COMPREPLY < <(compgen -W "summary json table nfd" -- "$cur"); return ;;
	--use-case) mapfile -t COMPREPLY < <(compgen -W "general coding long_context speed quality" -- "$cur"); return ;;
	--mode) mapfile -t COMPREPLY < <(compgen -W "inference lora qlora full" -- "$cur"); return ;;
	--log-level) mapfile -t COMPREPLY < <(compgen -W "error warn info debug" -- "$cur"); return ;;
	--kv-cache-type) mapfile -t COMPREPLY < <(compgen -W "f16 q8_0 q4_0" -- "$cur"); return ;;
	--source) mapfile -t COMPREPLY < <(compgen -W "catalog local cache dir ollama" -- "$cur"); return ;;
	--json|--config|--request|--db|--token-file|--nvml-lib|--nvidia-smi|--sysctl)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
	--profiles|--models-dir|--hf-cache|--ollama-models|--root|--nfd-dir|--static-dir|--data-dir)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
	esac
	if [ "$cmd" = bench ] && [ "$COMP_CWORD" -eq 2 ]; then
		mapfile -t COMPREPLY < <(compgen -W "record list host" -- "$cur")
		return
	fi
	# estimate and config name their MODEL first.
	if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]] &&
		{ [ "$cmd" = estimate ] || [ "$cmd" = config ]; }; then
		local IFS=$'\n'
		mapfile -t COMPREPLY < <(compgen -W "$("$bin" names models 2>/dev/null)" -- "$cur")
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$("$bin" "$cmd" --help 2>/dev/null |
			grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u) --help" -- "$cur")
		return
	fi
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -F _rigfit rigfit
