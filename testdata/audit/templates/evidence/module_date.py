from datetime import datetime

CURRENT_DATE = datetime.now().strftime('%Y-%m-%d')

SYSTEM_PROMPT = f'''
You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2021-09
Current date: {CURRENT_DATE}
'''
